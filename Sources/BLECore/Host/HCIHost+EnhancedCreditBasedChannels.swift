import BLEWire

/// Enhanced Credit Based Flow Control Mode on the host's links (Core Spec 5.4 Vol 3, Part A,
/// 4.25-4.28 and 10.2): up to five channels opened with one request, in both directions, and
/// their MTU and MPS reconfigured later. The channels are `CreditBasedChannel`s with the same
/// K-frames and credits as LE ones.
extension HCIHost {
    /// The smallest MTU and MPS of an enhanced channel (Vol 3, Part A, 4.25).
    static let enhancedMinimum = 64
    /// The MPS an enhanced channel may announce (Vol 3, Part A, 4.25 and 4.27).
    static let enhancedMPSRange = enhancedMinimum...maximumMPS
    /// The most channels one enhanced request names.
    static let enhancedMaximumChannels = 5

    /// Opens `count` (1 to 5) enhanced credit-based channels to `psm` on link `handle` with
    /// one L2CAP_CREDIT_BASED_CONNECTION_REQ (Vol 3, Part A, 4.25). Returns the channels the
    /// peer accepted, in request order: fewer than `count` when it refused some (results
    /// 0x0004, 0x0009, 0x000A); throws `.refused` when it accepted none.
    public func openEnhancedCreditBasedChannels(handle: UInt16, psm: UInt16, count: Int, mtu: Int, mps: Int? = nil, credits: Int? = nil,
                                                timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) -> [CreditBasedChannel] {
        if let lostReason { throw .link(.transportLost(lostReason)) }
        guard (1...Self.enhancedMaximumChannels).contains(count) else { throw .invalidChannelCount(count) }
        guard let link = links[handle] else { throw .notConnected(peer: "handle \(handle.hex)") }
        guard let cids = link.creditBased.freeCIDs(count) else { throw .noFreeCID(peer: "\(link.peer.address)") }
        let p = Self.channelParameters(mtu: mtu, mps: mps, credits: credits, minimum: Self.enhancedMinimum)
        return try await channelRequest(
            link: link, .open(psm: psm, localCIDs: cids, mtu: p.mtu, mps: p.mps, credits: p.credits, enhanced: true), timeout: timeout, cid: cids[0],
            body: .creditBasedConnectionRequest(psm: psm, mtu: UInt16(p.mtu), mps: UInt16(p.mps), initialCredits: UInt16(p.credits), sourceCIDs: cids)).get()
    }

    /// Sets this side's MTU and MPS on enhanced channels `localCIDs` (1 to 5) of link `handle`
    /// with one L2CAP_CREDIT_BASED_RECONFIGURE_REQ (Vol 3, Part A, 4.27); returns once the
    /// peer accepted. The MTU cannot shrink, nor the MPS of more than one channel at a time:
    /// such a request is refused here, before asking. `mps` nil keeps each channel's MPS.
    public func reconfigureCreditBasedChannels(handle: UInt16, localCIDs: [UInt16], mtu: Int, mps: Int? = nil,
                                               timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) {
        if let lostReason { throw .link(.transportLost(lostReason)) }
        guard (1...Self.enhancedMaximumChannels).contains(localCIDs.count), Set(localCIDs).count == localCIDs.count else {
            throw .invalidChannelCount(localCIDs.count)
        }
        guard let link = links[handle] else { throw .notConnected(peer: "handle \(handle.hex)") }
        let (psm, newMPS) = try reconfigurationToAsk(link: link, localCIDs: localCIDs, mtu: mtu, mps: mps)
        _ = try await channelRequest(
            link: link, .reconfigure(psm: psm, localCIDs: localCIDs, mtu: mtu, mps: newMPS), timeout: timeout, cid: localCIDs[0],
            body: .creditBasedReconfigureRequest(mtu: UInt16(mtu), mps: UInt16(newMPS), destinationCIDs: localCIDs)).get()
    }

    /// The checks before this side's Reconfigure Request: every channel of `localCIDs` open and
    /// enhanced, and the new MTU and MPS allowed against their current ones (4.27). Returns the
    /// PSM of the first channel and the MPS to ask for (`mps` nil: the first channel's).
    func reconfigurationToAsk(link: Link, localCIDs: [UInt16], mtu: Int, mps: Int?) throws(L2CAPChannelError) -> (psm: UInt16, mps: Int) {
        let peer = "\(link.peer.address)"
        var channels: [CreditBasedChannel] = []
        for cid in localCIDs {
            guard let channel = link.creditBased.channels[cid] else { throw .closed(peer: peer, cid: cid) }
            guard channel.isEnhanced else { throw .notEnhanced(cid: cid) }
            if let error = channel.assumeIsolated({ $0.endError }) { throw error }
            channels.append(channel)
        }
        let current = channels.map { channel in channel.assumeIsolated { (mtu: $0.mtu, mps: $0.mps) } }
        let newMPS = mps ?? current[0].mps
        let result = Self.reconfigureResult(mtu: mtu, mps: newMPS, current: current)
        guard result == .success else { throw .reconfigurationRefused(peer: peer, result: result) }
        return (channels[0].psm, newMPS)
    }

    // MARK: - From routing

    func handleEnhancedCreditBasedSignaling(link: Link, _ command: L2CAPSignalingCommand) {
        switch command.body {
        case .creditBasedConnectionRequest(let psm, let mtu, let mps, let credits, let scids):
            acceptEnhancedRequest(link: link, identifier: command.identifier, psm: psm, remoteCIDs: scids, mtu: Int(mtu), mps: Int(mps), credits: Int(credits))
        case .creditBasedConnectionResponse(let mtu, let mps, let credits, let result, let dcids):
            enhancedResponse(link: link, identifier: command.identifier, mtu: Int(mtu), mps: Int(mps), credits: Int(credits), result: result, dcids: dcids)
        case .creditBasedReconfigureRequest(let mtu, let mps, let cids):
            let result = peerReconfigures(link: link, mtu: Int(mtu), mps: Int(mps), remoteCIDs: cids)
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: command.identifier, body: .creditBasedReconfigureResponse(result: result.rawValue)))
        case .creditBasedReconfigureResponse(let result):
            guard let request = waitingRequest(link, identifier: command.identifier),
                  case .reconfigure(_, let cids, let mtu, let mps) = request.kind else { return }
            let outcome = CreditBasedReconfigureResult(rawValue: result)
            guard outcome == .success else {
                finishRequest(link, identifier: command.identifier, .failure(.reconfigurationRefused(peer: "\(link.peer.address)", result: outcome)))
                return
            }
            let channels = cids.compactMap { link.creditBased.channels[$0] }
            for channel in channels { channel.assumeIsolated { $0.reconfigured(mtu: mtu, mps: mps) } }
            finishRequest(link, identifier: command.identifier, .success(channels))
        default:
            break
        }
    }

    /// The response to this side's enhanced request (Vol 3, Part A, 4.26): one Destination
    /// CID per requested channel, 0x0000 for a refused one.
    func enhancedResponse(link: Link, identifier: UInt8, mtu: Int, mps: Int, credits: Int, result: UInt16, dcids: [UInt16]) {
        guard let request = waitingRequest(link, identifier: identifier),
              case .open(let psm, let cids, let ownMTU, let ownMPS, let ownCredits, true) = request.kind else { return }
        // 0x000D-0x000F: all connections pending; the final response follows (within the timeout).
        if (0x000D...0x000F).contains(result) { return }
        let peer = "\(link.peer.address)"
        let accepted = zip(cids, dcids).filter { $0.1 != 0 }
        guard !accepted.isEmpty else {
            let outcome = CreditBasedConnectionResult(rawValue: result)
            let error: L2CAPChannelError = outcome == .success
                ? .invalidResponse(peer: peer, psm: psm, detail: "success with no Destination CID")
                : .refused(peer: peer, psm: psm, result: outcome)
            return finishRequest(link, identifier: identifier, .failure(error))
        }
        let state = link.creditBased
        let remote = accepted.map(\.1)
        guard dcids.count == cids.count, mtu >= Self.enhancedMinimum, Self.enhancedMPSRange.contains(mps),
              remote.allSatisfy({ Self.leDynamicCIDs.contains($0) && state.channel(remoteCID: $0) == nil }), Set(remote).count == remote.count else {
            let list = dcids.map(\.hex).joined(separator: " ")
            return finishRequest(link, identifier: identifier, .failure(.invalidResponse(
                peer: peer, psm: psm, detail: "Destination CIDs [\(list)] for \(cids.count) channels, MTU \(mtu), MPS \(mps)")))
        }
        let channels = accepted.map { local, dcid in
            CreditBasedChannel(host: self, handle: link.handle, peer: link.peer, psm: psm, localCID: local, remoteCID: dcid, mtu: ownMTU, mps: ownMPS,
                               receiveWindow: ownCredits, peerMTU: mtu, peerMPS: mps, peerCredits: credits, isEnhanced: true)
        }
        for channel in channels { state.channels[channel.localCID] = channel }
        finishRequest(link, identifier: identifier, .success(channels))
    }

    /// The peer opens 1 to 5 channels to us (Vol 3, Part A, 4.25-4.26): all are refused for
    /// a PSM without a server (0x0002), a link without the security the server needs (0x0005,
    /// 0x0007, 0x0008) or an MTU or MPS out of range (0x000C); each Source CID
    /// outside the dynamic range (0x0009), already in use (0x000A) or beyond the free CIDs
    /// (0x0004) is refused alone, with Destination CID 0x0000.
    func acceptEnhancedRequest(link: Link, identifier: UInt8, psm: UInt16, remoteCIDs: [UInt16], mtu: Int, mps: Int, credits: Int) {
        let state = link.creditBased
        func answer(_ result: CreditBasedConnectionResult, dcids: [UInt16], server: CreditBasedLinkState.Server? = nil) {
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: identifier, body: .creditBasedConnectionResponse(
                mtu: UInt16(server.map { max($0.mtu, Self.enhancedMinimum) } ?? 0), mps: UInt16(server.map { max($0.mps, Self.enhancedMinimum) } ?? 0),
                initialCredits: UInt16(server?.credits ?? 0), result: result.rawValue, destinationCIDs: dcids)))
        }
        let refused = [UInt16](repeating: 0, count: remoteCIDs.count)
        guard let server = state.servers[psm] else { return answer(.psmNotSupported, dcids: refused) }
        if let refusal = securityRefusal(server, link: link, psm: psm) { return answer(refusal, dcids: refused) }
        guard mtu >= Self.enhancedMinimum, Self.enhancedMPSRange.contains(mps) else { return answer(.invalidParameters, dcids: refused) }
        var result = CreditBasedConnectionResult.success
        var dcids: [UInt16] = []
        var created: [CreditBasedChannel] = []
        for (index, scid) in remoteCIDs.enumerated() {
            let refusal: CreditBasedConnectionResult?
            if !Self.leDynamicCIDs.contains(scid) {
                refusal = .invalidSourceCID
            } else if state.channel(remoteCID: scid) != nil || remoteCIDs[..<index].contains(scid) {
                refusal = .sourceCIDAlreadyAllocated
            } else if state.freeCIDs(1) == nil {
                refusal = .noResources
            } else {
                refusal = nil
            }
            if let refusal {
                if result == .success { result = refusal }
                dcids.append(0)
                continue
            }
            guard let cid = state.freeCIDs(1)?.first else { continue }
            let channel = CreditBasedChannel(host: self, handle: link.handle, peer: link.peer, psm: psm, localCID: cid, remoteCID: scid,
                                             mtu: max(server.mtu, Self.enhancedMinimum), mps: max(server.mps, Self.enhancedMinimum),
                                             receiveWindow: server.credits, peerMTU: mtu, peerMPS: mps, peerCredits: credits, isEnhanced: true)
            state.channels[cid] = channel
            created.append(channel)
            dcids.append(cid)
        }
        answer(result, dcids: dcids, server: server)
        let list = created.map(\.localCID.hex).joined(separator: " ")
        logger.log(.info, "\(link.peer.address): accepted \(created.count) of \(remoteCIDs.count) enhanced L2CAP channels on PSM \(psm.hex) (local CIDs \(list), peer MTU \(mtu), MPS \(mps), \(credits) credits)")
        for channel in created { server.accept(channel) }
    }

    /// The peer's Reconfigure Request (Vol 3, Part A, 4.27): `remoteCIDs` are its own CIDs;
    /// the result is that of 4.28, and on success each channel sends by the new MTU and MPS.
    func peerReconfigures(link: Link, mtu: Int, mps: Int, remoteCIDs: [UInt16]) -> CreditBasedReconfigureResult {
        let state = link.creditBased
        var channels: [CreditBasedChannel] = []
        for cid in remoteCIDs {
            guard let channel = state.channel(remoteCID: cid), channel.isEnhanced else { return .invalidDestinationCID }
            channels.append(channel)
        }
        let current = channels.map { channel in channel.assumeIsolated { (mtu: $0.peerMTU, mps: $0.peerMPS) } }
        let result = Self.reconfigureResult(mtu: mtu, mps: mps, current: current)
        guard result == .success else { return result }
        for channel in channels { channel.assumeIsolated { $0.peerReconfigured(mtu: mtu, mps: mps) } }
        return .success
    }

    /// The checks of 4.27 for a new MTU and MPS on channels now at `current`, by either side:
    /// both in range (at least 64, MTU at most 65535, MPS at most 65533), the MTU not smaller
    /// on any channel, the MPS smaller only when one channel is reconfigured.
    static func reconfigureResult(mtu: Int, mps: Int, current: [(mtu: Int, mps: Int)]) -> CreditBasedReconfigureResult {
        guard (enhancedMinimum...65535).contains(mtu), enhancedMPSRange.contains(mps) else { return .unacceptableParameters }
        guard current.allSatisfy({ mtu >= $0.mtu }) else { return .mtuReductionNotAllowed }
        guard current.count == 1 || current.allSatisfy({ mps >= $0.mps }) else { return .mpsReductionNotAllowed }
        return .success
    }
}
