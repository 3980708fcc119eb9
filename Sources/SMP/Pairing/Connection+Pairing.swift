import BLECore

/// Pairing and security on a `Connection` (Vol 3, Part H; Vol 3, Part C, 10.2).
extension Connection {
    /// The Security Manager of the current link, made on first use. Its SMP channel takes
    /// the link's SMP PDUs from then on.
    public func securityManager() throws(PairingError) -> SecurityManager {
        guard let handle else { throw PairingError(peer: peer, .link(.disconnected(peer: peer, reason: lastDisconnectReason ?? .connectionTerminatedByLocalHost))) }
        if let sm = securityManagerState as? SecurityManager, sm.handle == handle, sm.isUsable { return sm }
        let channel: any L2CAPChannel
        do throws(ConnectionError) { channel = try securityManagerChannel() } catch { throw PairingError(peer: peer, .link(error)) }
        guard let local = localAddress else {
            throw PairingError(peer: peer, .localFailed(.unspecifiedReason, detail: "the controller's address is not known yet"))
        }
        let sm = SecurityManager(connection: self, channel: channel, handle: handle, local: local)
        sm.assumeIsolated { $0.start() }
        securityManagerState = sm
        return sm
    }

    /// Pairs with the peer as `options` say, encrypts the link, and keeps the bond in
    /// `store` when bonding. Throws a `PairingError` naming the peer and the SMP reason.
    ///
    ///     let bond = try await link.pair(options: options, agent: TerminalAgent(), store: bonds)
    @discardableResult
    public func pair(options: PairingOptions = PairingOptions(), agent: any PairingAgent = JustWorksAgent(),
                     store: (any BondStore)? = nil) async throws(PairingError) -> Bond {
        let sm = try securityManager()
        let bond = try await sm.pair(options: options, agent: agent)
        if options.bonding, let store {
            do throws(BondStoreError) { try store.save(bond) } catch {
                throw PairingError(peer: peer, .localFailed(.unspecifiedReason, detail: "paired, but the bond was not saved: \(error)"))
            }
        }
        return bond
    }

    /// Makes sure the link is at least at `level`, with a key of at least `keySize` octets
    /// when given: encrypts with a stored bond when it is good enough, pairs otherwise (asking
    /// for MITM protection for `.authenticated`, Secure Connections Only for
    /// `.secureConnections`, and keys of `keySize` octets at least). A `keySize` above
    /// `options.maximumKeySize` fails at once with Encryption Key Size (0x06): pairing could
    /// not give it.
    ///
    ///     try await link.requireSecurity(.encrypted, store: bonds)
    public func requireSecurity(_ level: SecurityLevel, keySize: Int? = nil, options: PairingOptions = PairingOptions(),
                                agent: any PairingAgent = JustWorksAgent(), store: (any BondStore)? = nil) async throws(PairingError) {
        let size = keySize.map { UInt8(min(16, max(7, $0))) } ?? 7
        if securityLevel >= level, keySize == nil || (encryptionKeySize ?? 0) >= Int(size) { return }
        if size > options.maximumKeySize {
            throw PairingError(peer: peer, .localFailed(.encryptionKeySize, detail: "the peer needs a \(size)-octet key and PairingOptions.maximumKeySize is \(options.maximumKeySize): allow up to 16 octets to pair again with a longer key"))
        }
        if let ltk = store?.bond(resolving: peer)?.longTermKey, ltk.level >= level, ltk.keySize >= size {
            do throws(ConnectionError) {
                try await startEncryption(longTermKey: ltk.key, ediv: ltk.ediv, rand: ltk.rand, level: ltk.level, keySize: Int(ltk.keySize))
                return
            } catch {
                // PIN or Key Missing (0x06): the peer forgot the bond. Say so; pairing again is
                // the app's decision (`pair`), since it replaces the stored keys.
                if case .command(_, .commandFailed(_, let status)) = error, status == .pinOrKeyMissing {
                    throw PairingError(peer: peer, .peerForgotBond)
                }
                // Some peers end the link instead, with the same reason.
                if case .disconnected(_, let reason) = error, reason == .pinOrKeyMissing {
                    throw PairingError(peer: peer, .peerForgotBond)
                }
                throw PairingError(peer: peer, .link(error))
            }
        }
        var o = options
        if level >= .authenticated { o.mitm = true }
        if level >= .secureConnections { o.secureConnectionsOnly = true }
        o.minimumKeySize = max(o.minimumKeySize, size)
        let bond = try await pair(options: o, agent: agent, store: store)
        let reached = securityLevel
        guard reached >= level else {
            throw PairingError(peer: peer, .localFailed(.authenticationRequirements, detail: "pairing gave \(reached), \(level) was required (\(bond.longTermKey.map { "\($0.keySize)-octet key" } ?? "no key"))"))
        }
    }

    /// Answers the peer's Security Requests (Vol 3, Part H, 2.4.6): raise security to what it
    /// asks for with `requireSecurity`. Without this, they are refused.
    public func acceptSecurityRequests(options: PairingOptions = PairingOptions(), agent: any PairingAgent = JustWorksAgent(),
                                       store: (any BondStore)? = nil) throws(PairingError) {
        let sm = try securityManager()
        sm.assumeIsolated {
            $0.onSecurityRequest { [weak self] authReq in
                guard let self else { return }
                let level: SecurityLevel = authReq.contains(.mitm) ? (authReq.contains(.secureConnections) ? .secureConnections : .authenticated) : .encrypted
                Task { try? await self.requireSecurity(level, options: options, agent: agent, store: store) }
            }
        }
    }
}

extension Connection {
    /// A function that raises this link's security with `requireSecurity`, for GATT's retry
    /// on Insufficient Encryption / Authentication / Encryption Key Size
    /// (`Peripheral.setSecurityRaiser`).
    ///
    ///     await peripheral.setSecurityRaiser(link.securityRaiser(store: bonds))
    public nonisolated func securityRaiser(options: PairingOptions = PairingOptions(), agent: any PairingAgent = JustWorksAgent(),
                                           store: (any BondStore)? = nil) -> SecurityRaiser {
        { [weak self] level, keySize in
            guard let self else { return }
            try await self.requireSecurity(level, keySize: keySize, options: options, agent: agent, store: store)
        }
    }
}
