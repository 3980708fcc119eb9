/// LE credit-based connection-oriented channels on this link (Core Spec 5.4 Vol 3, Part A, 10.1).
extension Connection {
    /// Opens an LE credit-based channel to the peer's `psm`. `mtu` is the largest SDU this
    /// side accepts; `mps` the largest K-frame payload (default 247) and `credits` the receive
    /// window (default: one whole SDU, at least 8 K-frames). `security` is the level the link
    /// reaches before the request; a refusal for lack of security raises it and asks again
    /// once (see `setSecurityRaiser`).
    ///
    ///     let channel = try await connection.openL2CAPChannel(psm: 0x0080, mtu: 2048, security: .encrypted)
    public func openL2CAPChannel(psm: UInt16, mtu: Int = 2048, mps: Int? = nil, credits: Int? = nil,
                                 security: SecurityLevel = .none,
                                 timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) -> CreditBasedChannel {
        try await raiseChannelSecurity(to: security, psm: psm)
        do {
            return try await openCreditBasedChannel(psm: psm, mtu: mtu, mps: mps, credits: credits, timeout: timeout)
        } catch {
            try await raiseChannelSecurity(after: error, psm: psm)
            return try await openCreditBasedChannel(psm: psm, mtu: mtu, mps: mps, credits: credits, timeout: timeout)
        }
    }

    /// Opens `count` (1 to 5) channels to the peer's `psm` with one enhanced Credit Based
    /// Connection Request (Core Spec 5.4 Vol 3, Part A, 4.25; MTU and MPS at least 64). Returns
    /// the channels the peer accepted (fewer than `count` when it refused some); throws
    /// `.refused` with the peer's result when it accepted none. `security` as for
    /// `openL2CAPChannel`.
    ///
    ///     let channels = try await connection.openL2CAPChannels(psm: 0x0080, count: 3, mtu: 2048)
    public func openL2CAPChannels(psm: UInt16, count: Int, mtu: Int = 2048, mps: Int? = nil, credits: Int? = nil,
                                  security: SecurityLevel = .none,
                                  timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) -> [CreditBasedChannel] {
        try await raiseChannelSecurity(to: security, psm: psm)
        do {
            return try await openEnhancedCreditBasedChannels(psm: psm, count: count, mtu: mtu, mps: mps, credits: credits, timeout: timeout)
        } catch {
            try await raiseChannelSecurity(after: error, psm: psm)
            return try await openEnhancedCreditBasedChannels(psm: psm, count: count, mtu: mtu, mps: mps, credits: credits, timeout: timeout)
        }
    }

    private func openCreditBasedChannel(psm: UInt16, mtu: Int, mps: Int?, credits: Int?,
                                        timeout: Duration) async throws(L2CAPChannelError) -> CreditBasedChannel {
        guard let handle else { throw .notConnected(peer: "\(peer.address)") }
        return try await host.openCreditBasedChannel(handle: handle, psm: psm, mtu: mtu, mps: mps, credits: credits, timeout: timeout)
    }

    private func openEnhancedCreditBasedChannels(psm: UInt16, count: Int, mtu: Int, mps: Int?, credits: Int?,
                                                 timeout: Duration) async throws(L2CAPChannelError) -> [CreditBasedChannel] {
        guard let handle else { throw .notConnected(peer: "\(peer.address)") }
        return try await host.openEnhancedCreditBasedChannels(handle: handle, psm: psm, count: count, mtu: mtu, mps: mps, credits: credits, timeout: timeout)
    }

    /// Raises this side's MTU (and sets its MPS) on 1 to 5 enhanced channels of this link with
    /// one Credit Based Reconfigure Request (Vol 3, Part A, 4.27); returns once the peer agreed.
    ///
    ///     try await connection.reconfigureL2CAPChannels(channels, mtu: 4096)
    public func reconfigureL2CAPChannels(_ channels: [CreditBasedChannel], mtu: Int, mps: Int? = nil,
                                         timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) {
        guard let handle else { throw .notConnected(peer: "\(peer.address)") }
        try await host.reconfigureCreditBasedChannels(handle: handle, localCIDs: channels.map(\.localCID), mtu: mtu, mps: mps, timeout: timeout)
    }

    /// Accepts the channels the peer opens to `psm` on the current link, with LE or enhanced
    /// Credit Based Connection Requests. Ending the loop (or the link ending) unregisters the PSM.
    /// `security` and `minimumKeySize` (octets, 7 to 16) are what the link needs at the time
    /// of each request; below them the request is refused (0x0005, 0x0007 or 0x0008, see
    /// `CreditBasedConnectionResult.channelServerRefusal`) and no channel is made, so the peer
    /// can pair and ask again.
    ///
    ///     for await channel in try await connection.acceptL2CAPChannels(psm: 0x0080, security: .encrypted) { serve(channel) }
    public func acceptL2CAPChannels(psm: UInt16, mtu: Int = 2048, mps: Int? = nil, credits: Int? = nil,
                                    security: SecurityLevel = .none, minimumKeySize: Int = 7) throws(L2CAPChannelError) -> AsyncStream<CreditBasedChannel> {
        guard let handle else { throw .notConnected(peer: "\(peer.address)") }
        let (stream, continuation) = AsyncStream.makeStream(of: CreditBasedChannel.self)
        let refusal = channelServerSecurity(security, minimumKeySize: minimumKeySize)
        try host.assumeIsolated { host in
            Result { () throws(L2CAPChannelError) in
                try host.registerCreditBasedServer(handle: handle, psm: psm, mtu: mtu, mps: mps, credits: credits,
                                                   securityRefusal: refusal) { continuation.yield($0) }
            }
        }.get()
        let host = self.host
        continuation.onTermination = { [executor] _ in
            executor.queue.async { host.assumeIsolated { $0.unregisterCreditBasedServer(handle: handle, psm: psm) } }
        }
        return stream
    }
}
