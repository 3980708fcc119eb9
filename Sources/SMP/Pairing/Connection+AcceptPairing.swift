import BLECore
import BLEWire

/// Pairing on a link where this side is the peripheral (Vol 3, Part H, 2.3 and 2.4.6): the
/// central pairs, this side answers.
extension Connection {
    /// Answers the central's Pairing Requests on this peripheral-role link from now on, in
    /// every association model the IO capabilities allow (`options`, with `agent` for the
    /// person), LE Secure Connections or legacy. Keys: `options.responderKeys` are the most
    /// this side gives, `options.initiatorKeys` the most it takes (`PairingOptions.responder`
    /// allows all). A bonding pairing is saved in `store`, and the central's later LE Long
    /// Term Key Requests on this link are answered from it (EDIV and Rand for a legacy key,
    /// zero for a Secure Connections one; a central with a resolvable private address is found
    /// by its IRK). `onResult` hears each pairing's outcome. Call it before the central can
    /// pair: as soon as the link comes from `Central.incomingConnections()`.
    ///
    ///     for await link in await central.incomingConnections() { try await link.acceptPairing(agent: agent, store: bonds) }
    public func acceptPairing(options: PairingOptions = .responder, agent: any PairingAgent = JustWorksAgent(), store: (any BondStore)? = nil,
                              onResult: (@Sendable (Result<Bond, PairingError>) -> Void)? = nil) throws(PairingError) {
        guard role == .peripheral else {
            throw PairingError(peer: peer, .localFailed(.commandNotSupported, detail: "acceptPairing is for links where this side is the peripheral; as central, use pair"))
        }
        let sm = try securityManager()
        let responder = PairingResponder(options: options, agent: agent, store: store, onResult: onResult)
        sm.assumeIsolated { $0.setResponder(responder) }
        if let store {
            let peer = self.peer
            setLongTermKeySource { ediv, rand in
                store.storedLongTermKey(for: peer, ediv: ediv, rand: rand).map { ($0.key, $0.level, Int($0.keySize)) }
            }
        }
    }

    /// Asks the central to raise the link to `level` with a Security Request (Vol 3, Part H,
    /// 3.5.7): AuthReq with Bonding, MITM for `.authenticated` and above, SC for
    /// `.secureConnections`. The central decides: it pairs (answered by `acceptPairing`) or
    /// encrypts with a bond. Nothing is sent while a pairing runs.
    ///
    ///     try await link.sendSecurityRequest(.authenticated)
    public func sendSecurityRequest(_ level: SecurityLevel, bonding: Bool = true) async throws(PairingError) {
        var authReq: AuthenticationRequirements = [.secureConnections]
        if bonding { authReq.insert(.bonding) }
        if level >= .authenticated { authReq.insert(.mitm) }
        let sm = try securityManager()
        try await sm.sendSecurityRequest(authReq)
    }
}

extension Central {
    /// Answers pairing on every peripheral-role link from now on, as `Connection.acceptPairing`
    /// does on one: set up as the link is accepted, before `incomingConnections()` offers it,
    /// so a central that pairs or encrypts at once is answered too. `onResult` hears each
    /// pairing's link and outcome. nil for `options` stops it for later links.
    ///
    ///     await central.acceptPairing(agent: agent, store: bonds)
    public func acceptPairing(options: PairingOptions? = .responder, agent: any PairingAgent = JustWorksAgent(), store: (any BondStore)? = nil,
                              onResult: (@Sendable (Connection, Result<Bond, PairingError>) -> Void)? = nil) {
        guard let options else { return setPeripheralLinkSetup(nil) }
        setPeripheralLinkSetup { link in
            let report = onResult.map { onResult in { @Sendable (result: Result<Bond, PairingError>) in onResult(link, result) } }
            link.assumeIsolated { link in
                do throws(PairingError) {
                    try link.acceptPairing(options: options, agent: agent, store: store, onResult: report)
                } catch {
                    report?(.failure(error))
                }
            }
        }
    }

    private func setPeripheralLinkSetup(_ setup: (@Sendable (Connection) -> Void)?) {
        peripheralLinkSetup = setup
    }
}

extension PairingOptions {
    /// The defaults of a peripheral answering pairing: Just Works-capable, bonding, Secure
    /// Connections, and every key both ways (the central's IRK resolves its private address).
    ///
    ///     try await link.acceptPairing(options: .responder)
    public static var responder: PairingOptions {
        var o = PairingOptions()
        o.initiatorKeys = [.encryptionKey, .identityKey, .signingKey]
        o.responderKeys = [.encryptionKey, .identityKey, .signingKey]
        return o
    }
}
