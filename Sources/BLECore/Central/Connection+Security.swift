/// Link encryption (Core Spec Vol 4, Part E, 7.8.24 and 7.7.8; Vol 3, Part H, 2.4.4). The
/// Security Manager (module SMP) pairs and hands the key here; this file starts encryption
/// with it and keeps `securityLevel` current from the controller's events.
extension Connection {
    /// Starts encryption with a key (HCI LE Enable Encryption) and returns once the controller
    /// reports Encryption Change (or Key Refresh Complete when the link was encrypted already).
    /// `level` is what the key is worth (how it was made); it becomes `securityLevel`.
    /// `keySize` is the key's size in octets (7 to 16) when the caller knows it; it becomes
    /// `encryptionKeySize` unless the controller reports one (Encryption Change v2).
    /// Returns the key size when the controller reports it.
    ///
    ///     try await link.startEncryption(longTermKey: bond.ltk, ediv: 0, rand: 0, level: .secureConnections, keySize: 16)
    @discardableResult
    public func startEncryption(longTermKey: UInt128, ediv: UInt16, rand: UInt64, level: SecurityLevel, keySize: UInt8? = nil,
                                timeout: Duration = .seconds(30)) async throws(ConnectionError) -> UInt8? {
        guard let handle else { throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost) }
        let opcode = HCICommand.LEEnableEncryption.opcode
        guard security.pending == nil else { throw .command(peer: peer, .commandFailed(opcode: opcode, status: .commandDisallowed)) }
        let waiters: Waiters<UInt8?, ConnectionError>
        if let w = security.waiters { waiters = w } else {
            waiters = Waiters(executor: executor, scheduler: host.scheduler)
            security.waiters = waiters
        }
        let peer = self.peer
        let ms = Int(timeout.nanoseconds / 1_000_000)
        // The waiter is in place before the command goes out: the event can follow its
        // Command Status at once.
        let result = await waiters.wait(deadline: (timeout, .failure(.command(peer: peer, .commandTimeout(opcode: opcode, milliseconds: ms)))),
                                        cancelled: { _ in .failure(.command(peer: peer, .cancelledAfterSending(opcode: opcode))) }) { id in
            security.pending = .init(id: id, level: level, keySize: keySize)
            // A task of the host's: `Central.close()` waits for it.
            host.enter(on: executor) { $0.background { host in
                do throws(HCIError) {
                    try await host.send(HCICommand.leEnableEncryption(handle: handle, random: rand, ediv: ediv, longTermKey: longTermKey))
                } catch {
                    await self.finishEncryption(id: id, .failure(.command(peer: peer, error)))
                }
            } }
        }
        if let pending = security.pending, !waiters.contains(pending.id) { security.pending = nil }
        return try result.get()
    }

    /// The SMP channel (CID 0x0006) of the current link. While it exists the host hands it
    /// every SMP PDU; without it the host refuses pairing (Pairing Not Supported).
    public func securityManagerChannel() throws(ConnectionError) -> any L2CAPChannel {
        guard let handle else { throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost) }
        guard let channel = host.enter(on: executor, { $0.fixedChannel(handle: handle, channelID: L2CAPChannelID.securityManager) }) else {
            throw .disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost)
        }
        return channel
    }

    /// This side's address on the link (the controller's public address: the central
    /// connects with its public address), once the controller reported it.
    public var localAddress: LEAddress? {
        guard let address = central?.enter(on: executor, { $0.controllerInfo?.address }) else { return nil }
        return LEAddress(address, type: .public)
    }

    // MARK: - Driven by the central on the executor

    func encryptionChanged(_ e: HCIEvent.EncryptionChange) {
        guard e.status == .success else {
            finishEncryption(id: security.pending?.id, .failure(.command(peer: peer, .commandFailed(opcode: HCICommand.LEEnableEncryption.opcode, status: e.status))))
            return
        }
        if e.encryptionEnabled == 0 {
            security.keySize = nil
            setSecurityLevel(.none)
        } else {
            if let size = e.keySize { security.keySize = Int(size) } else if let pending = security.pending { security.keySize = pending.keySize.map(Int.init) }
            setSecurityLevel(security.pending?.level ?? max(securityLevel, .encrypted))
        }
        finishEncryption(id: security.pending?.id, .success(e.keySize))
    }

    func keyRefreshCompleted(status: HCIStatus) {
        guard status == .success else {
            finishEncryption(id: security.pending?.id, .failure(.command(peer: peer, .commandFailed(opcode: HCICommand.LEEnableEncryption.opcode, status: status))))
            return
        }
        if let pending = security.pending {
            security.keySize = pending.keySize.map(Int.init)
            setSecurityLevel(pending.level)
        }
        finishEncryption(id: security.pending?.id, .success(nil))
    }

    func linkSecurityEnded(reason: HCIStatus) {
        securityLevel = .none
        security.keySize = nil
        finishEncryption(id: security.pending?.id, .failure(.disconnected(peer: peer, reason: reason)))
    }

    private func setSecurityLevel(_ level: SecurityLevel) {
        guard level != securityLevel else { return }
        securityLevel = level
        security.levelToRestore = level
        emit(.securityChanged(level))
    }

    private func finishEncryption(id: UInt64?, _ result: Result<UInt8?, ConnectionError>) {
        guard let pending = security.pending, pending.id == id else { return }
        security.pending = nil
        security.waiters?.resume(pending.id, with: result)
    }
}

/// What a `Connection` keeps about its encryption.
package struct ConnectionSecurity {
    struct Pending {
        let id: UInt64
        let level: SecurityLevel
        let keySize: UInt8?
    }
    /// The Enable Encryption under way: its waiter and the level its key gives.
    var pending: Pending?
    var waiters: Waiters<UInt8?, ConnectionError>?
    /// The Security Manager's per-link state (module SMP), kept with the link it belongs to.
    package var manager: (any AnyObject & Sendable)?
    /// The encryption key size in octets while encrypted, when known (`encryptionKeySize`).
    var keySize: Int?
    /// The level the link had when it dropped (a drop does not clear it).
    var levelToRestore = SecurityLevel.none
    /// What raises the link's security for a channel that needs more (`setSecurityRaiser`).
    var raiser: SecurityRaiser?
}

extension Connection {
    /// The level the link had before it last dropped (`.none` if it was not encrypted): a
    /// restored link should reach it again before its first request (a reconnect with a bond
    /// re-encrypts before resubscribing).
    ///
    ///     if await link.securityLevelToRestore > link.securityLevel { try await link.requireSecurity(...) }
    public var securityLevelToRestore: SecurityLevel { security.levelToRestore }

    /// The size in octets (7 to 16) of the key the link is encrypted with: from Encryption
    /// Change v2, or from `startEncryption(keySize:)` (pairing and bonds give it). nil while
    /// not encrypted, or when neither said it.
    ///
    ///     if let size = await link.encryptionKeySize, size < 16 { print("short key: \(size) octets") }
    public var encryptionKeySize: Int? { security.keySize }

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
        central?.enter(on: executor) { c in
            if let s = c.securityState { return s }
            let s = make()
            c.securityState = s
            return s
        }
    }
}
