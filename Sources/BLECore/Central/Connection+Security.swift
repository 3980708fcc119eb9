import BLEWire

/// Link encryption (Core Spec Vol 4, Part E, 7.8.24 and 7.7.8; Vol 3, Part H, 2.4.4). The
/// Security Manager (module SMP) pairs and hands the key here; this file starts encryption
/// with it and keeps `securityLevel` and `encryptionKeySize` current from the controller's
/// events.
extension Connection {
    /// The size of the link's encryption key in octets (7 to 16), nil while the link is not
    /// encrypted or the controller did not say. It comes from Encryption Change v2 (event
    /// 0x59), else from HCI_Read_Encryption_Key_Size (Vol 4, Part E, 7.5.7) after Encryption
    /// Change v1 or Encryption Key Refresh Complete; `startEncryption` returns once it is known.
    ///
    ///     if let size = await link.encryptionKeySize, size < 16 { try await link.requireSecurity(.encrypted, keySize: 16) }
    public var encryptionKeySize: Int? { linkSecurity.value.keySize }

    /// Starts encryption with a key (HCI LE Enable Encryption) and returns once the controller
    /// reports Encryption Change (or Key Refresh Complete when the link was encrypted already).
    /// `level` is what the key is worth (how it was made); it becomes `securityLevel`.
    /// `keySize` is the key's size in octets when the caller knows it (the Security Manager
    /// made or stored the key): it stands for `encryptionKeySize` when the controller does not
    /// say. Returns the key size (`encryptionKeySize`) when known.
    ///
    ///     try await link.startEncryption(longTermKey: bond.ltk, ediv: 0, rand: 0, level: .secureConnections, keySize: 16)
    @discardableResult
    public func startEncryption(longTermKey: UInt128, ediv: UInt16, rand: UInt64, level: SecurityLevel, keySize: Int? = nil,
                                timeout: Duration = .seconds(30)) async throws(ConnectionError) -> UInt8? {
        guard let handle else { throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost) }
        let peer = self.peer
        return try await awaitEncryptionChange(timeout: timeout) { id in
            security.pending = .init(id: id, level: level, keySize: keySize)
            // A task of the host's: `Central.close()` waits for it.
            host.background { host in
                do throws(HCIError) {
                    try await host.send(HCICommand.leEnableEncryption(handle: handle, random: rand, ediv: ediv, longTermKey: longTermKey))
                } catch {
                    await self.finishEncryption(id: id, .failure(.command(peer: peer, error)))
                }
            }
        }
    }

    /// As peripheral: waits for the central to start encryption, answers its LE Long Term
    /// Key Request (EDIV and Rand zero, Vol 3, Part H, 2.4.4) with `longTermKey`, and returns
    /// once the controller reports Encryption Change. `level` becomes `securityLevel`. The
    /// Security Manager (module SMP) calls it with the STK or LTK pairing made. `armed` runs
    /// once the answer is in place, before the wait: send there the PDU after which the
    /// central starts encryption.
    @discardableResult
    package func acceptEncryption(longTermKey: UInt128, level: SecurityLevel, keySize: Int, timeout: Duration = .seconds(30),
                                  armed: @Sendable () -> Void = {}) async throws(ConnectionError) -> UInt8? {
        guard handle != nil else { throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost) }
        return try await awaitEncryptionChange(timeout: timeout) { id in
            security.pending = .init(id: id, level: level, keySize: keySize, peripheralKey: longTermKey)
            armed()
        }
    }

    /// Waits (at most `timeout`) for the link's Encryption Change or Key Refresh Complete, one
    /// encryption at a time. `begin` runs with the wait's id once the waiter is in place: the
    /// event can follow whatever it sends at once.
    private func awaitEncryptionChange(timeout: Duration, begin: (UInt64) -> Void) async throws(ConnectionError) -> UInt8? {
        let opcode = HCICommand.LEEnableEncryption.opcode
        guard security.pending == nil else { throw .command(peer: peer, .commandFailed(opcode: opcode, status: .commandDisallowed)) }
        let waiters: Waiters<UInt8?, ConnectionError>
        if let w = security.waiters { waiters = w } else {
            waiters = Waiters(executor: executor, scheduler: host.scheduler)
            security.waiters = waiters
        }
        let peer = self.peer
        let ms = Int(timeout.nanoseconds / 1_000_000)
        let result = await waiters.wait(deadline: (timeout, .failure(.command(peer: peer, .commandTimeout(opcode: opcode, milliseconds: ms)))),
                                        cancelled: { _ in .failure(.command(peer: peer, .cancelledAfterSending(opcode: opcode))) }, added: begin)
        if let pending = security.pending, !waiters.contains(pending.id) { security.pending = nil }
        return try result.get()
    }

    /// The key for the controller's LE Long Term Key Request on this link (this side is the
    /// peripheral), or nil: the key of a pairing waiting in `acceptEncryption`, else the
    /// link's `longTermKeySource`. The level and size of the key answered are what the
    /// following Encryption Change gives the link.
    func longTermKeyRequested(ediv: UInt16, rand: UInt64) -> UInt128? {
        if let pending = security.pending, let key = pending.peripheralKey {
            return ediv == 0 && rand == 0 ? key : nil
        }
        guard let answer = security.longTermKeySource?(ediv, rand) else { return nil }
        security.answered = (answer.level, answer.keySize)
        return answer.key
    }

    /// Where this link's LE Long Term Key Requests are answered from, with what each key is
    /// worth (module SMP: `Connection.acceptPairing(store:)`); nil leaves them to
    /// `Central.setLongTermKeyProvider`.
    package func setLongTermKeySource(_ source: LongTermKeySource?) {
        security.longTermKeySource = source
    }

    /// The SMP channel (CID 0x0006) of the current link. While it exists the host hands it
    /// every SMP PDU; without it the host refuses pairing (Pairing Not Supported).
    public func securityManagerChannel() throws(ConnectionError) -> any L2CAPChannel {
        guard let handle else { throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost) }
        guard let channel = host.assumeIsolated({ $0.fixedChannel(handle: handle, channelID: L2CAPChannelID.securityManager) }) else {
            throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost)
        }
        return channel
    }

    /// This side's address on the link: the random address the central connected with
    /// (`Central.setOwnAddress`), else the controller's public address once it reported it.
    public var localAddress: LEAddress? {
        if let ownLinkAddress { return ownLinkAddress }
        guard let address = central?.facts.value.controllerInfo?.address else { return nil }
        return LEAddress(address, type: .public)
    }

    // MARK: - Driven by the central on the executor

    func encryptionChanged(_ e: HCIEvent.EncryptionChange) {
        guard e.status == .success else {
            security.answered = nil
            finishEncryption(id: security.pending?.id, .failure(.command(peer: peer, .commandFailed(opcode: HCICommand.LEEnableEncryption.opcode, status: e.status))))
            return
        }
        if e.encryptionEnabled == 0 {
            setSecurityLevel(.none)
            setEncryptionKeySize(nil)
            finishEncryption(id: security.pending?.id, .success(nil))
            return
        }
        setSecurityLevel(security.pending?.level ?? security.answered?.level ?? max(securityLevel, .encrypted))
        if let size = e.keySize {
            security.answered = nil
            setEncryptionKeySize(Int(size))
            finishEncryption(id: security.pending?.id, .success(size))
        } else {
            readEncryptionKeySize(for: security.pending?.id)
        }
    }

    func keyRefreshCompleted(status: HCIStatus) {
        guard status == .success else {
            finishEncryption(id: security.pending?.id, .failure(.command(peer: peer, .commandFailed(opcode: HCICommand.LEEnableEncryption.opcode, status: status))))
            return
        }
        if let level = security.pending?.level { setSecurityLevel(level) }
        readEncryptionKeySize(for: security.pending?.id)
    }

    func linkSecurityEnded(reason: HCIStatus) {
        linkSecurity.value = LinkSecurity()
        security.answered = nil
        finishEncryption(id: security.pending?.id, .failure(.disconnected(peer: peer, reason: reason)))
    }

    /// Asks the controller for the key size (HCI_Read_Encryption_Key_Size, 7.5.7), then ends
    /// the Enable Encryption `id` (if any). A controller that cannot say (or lists the command
    /// as unsupported) leaves it at the size `startEncryption` was given, or nil.
    private func readEncryptionKeySize(for id: UInt64?) {
        let opcode = HCIOpcode(rawValue: 0x1408)
        let listed = central?.facts.value.controllerInfo?.supportedCommands.supports(opcode)
        let given = (security.pending?.keySize ?? security.answered?.keySize).map { UInt8(clamping: $0) }
        security.answered = nil
        guard let handle, listed != false else {
            if let given { setEncryptionKeySize(Int(given)) }
            return finishEncryption(id: id, .success(given))
        }
        host.background { host in
            let size: UInt8?
            do throws(HCIError) {
                size = try await host.read(HCIReturn.ReadEncryptionKeySize.self, HCICommand.readEncryptionKeySize(handle: handle)).keySize
            } catch {
                size = nil
            }
            await self.encryptionKeySizeRead(size ?? given, handle: handle, id: id)
        }
    }

    private func encryptionKeySizeRead(_ size: UInt8?, handle: UInt16, id: UInt64?) {
        guard self.handle == handle, securityLevel > .none else { return finishEncryption(id: id, .success(nil)) }
        setEncryptionKeySize(size.map(Int.init))
        finishEncryption(id: id, .success(size))
    }

    private func setSecurityLevel(_ level: SecurityLevel) {
        guard level != securityLevel else { return }
        linkSecurity.value.level = level
        security.levelToRestore = level
        emit(.securityChanged(level))
    }

    private func setEncryptionKeySize(_ size: Int?) {
        guard size != linkSecurity.value.keySize else { return }
        linkSecurity.value.keySize = size
        emit(.encryptionKeySizeChanged(size))
    }

    private func finishEncryption(id: UInt64?, _ result: Result<UInt8?, ConnectionError>) {
        guard let pending = security.pending, pending.id == id else { return }
        security.pending = nil
        security.waiters?.resume(pending.id, with: result)
    }
}

/// A link's security as a GATT server checks it (`Connection.linkSecurity`): the level and
/// the key size in octets, once the controller said (`Connection.encryptionKeySize`).
///
///     let level = connection.linkSecurity.value.level  // on the adapter queue
package struct LinkSecurity: Sendable {
    package var level = SecurityLevel.none
    package var keySize: Int?
}

/// What a `Connection` keeps about its encryption.
package struct ConnectionSecurity {
    struct Pending {
        let id: UInt64
        let level: SecurityLevel
        /// The key's size, when the caller of `startEncryption` knew it.
        let keySize: Int?
        /// As peripheral (`acceptEncryption`): the key the LE Long Term Key Request gets.
        var peripheralKey: UInt128? = nil
    }
    /// The Enable Encryption under way: its waiter and the level its key gives.
    var pending: Pending?
    var waiters: Waiters<UInt8?, ConnectionError>?
    /// The Security Manager's per-link state (module SMP), kept with the link it belongs to.
    package var manager: (any AnyObject & Sendable)?
    /// The level the link had when it dropped (a drop does not clear it).
    var levelToRestore = SecurityLevel.none
    /// What raises the link's security for a channel that needs more (`setSecurityRaiser`).
    var raiser: SecurityRaiser?
    /// As peripheral: where LE Long Term Key Requests are answered from (`setLongTermKeySource`).
    var longTermKeySource: LongTermKeySource?
    /// The level and size of the key `longTermKeySource` last answered with, until the
    /// Encryption Change it leads to.
    var answered: (level: SecurityLevel, keySize: Int)?
}

/// Looks up the key for an LE Long Term Key Request on one peripheral-role link by its EDIV
/// and Rand, with the level it gives and its size in octets; nil: no such key.
package typealias LongTermKeySource = @Sendable (_ ediv: UInt16, _ rand: UInt64) -> (key: UInt128, level: SecurityLevel, keySize: Int)?

extension Connection {
    /// The level the link had before it last dropped (`.none` if it was not encrypted): a
    /// restored link should reach it again before its first request (a reconnect with a bond
    /// re-encrypts before resubscribing).
    ///
    ///     if await link.securityLevelToRestore > link.securityLevel { try await link.requireSecurity(...) }
    public var securityLevelToRestore: SecurityLevel { security.levelToRestore }

    /// The Security Manager's per-link state (module SMP).
    package var securityManagerState: (any AnyObject & Sendable)? {
        get { security.manager }
        set { security.manager = newValue }
    }
}

extension Connection {
    /// The central's Security Manager state that outlives links (module SMP), made by
    /// `make` on first use; nil once the central is gone.
    package func centralSecurityState(make: @Sendable () -> any AnyObject & Sendable) -> (any AnyObject & Sendable)? {
        central?.assumeIsolated { c in
            if let s = c.securityState { return s }
            let s = make()
            c.securityState = s
            return s
        }
    }
}
