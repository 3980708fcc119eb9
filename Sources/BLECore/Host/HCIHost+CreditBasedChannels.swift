import BLEWire

/// LE credit-based channels on the host's links: opening one to a PSM, accepting the peer's
/// on registered PSMs, routing K-frames and the credit and disconnection commands of the LE
/// signaling channel to them (Core Spec 5.4 Vol 3, Part A, 4.6, 4.7, 4.22-4.24 and 10.1).
/// The enhanced requests (4.25-4.28) are in HCIHost+EnhancedCreditBasedChannels.swift.
extension HCIHost {
    /// The LE dynamic CID range (Vol 3, Part A, 2.1, table 2.4).
    static let leDynamicCIDs: ClosedRange<UInt16> = 0x0040...0x007F
    /// The largest MPS of a credit-based channel (Vol 3, Part A, 4.22 and 4.25).
    static let maximumMPS = 65533
    /// The MPS an LE credit-based channel may announce (Vol 3, Part A, 4.22).
    static let leMPSRange = 23...maximumMPS

    /// The credit-based channels of one link, owned by the host on the adapter executor.
    final class CreditBasedLinkState {
        struct Server {
            let mtu: Int, mps: Int, credits: Int
            /// The refusal of a request on a link without the security the server needs.
            let securityRefusal: (@Sendable () -> CreditBasedConnectionResult?)?
            let accept: @Sendable (CreditBasedChannel) -> Void
        }
        /// A request of this side on the signaling channel, waiting for its response.
        struct PendingRequest {
            enum Kind {
                /// LE (one CID) or enhanced (1 to 5 CIDs) Credit Based Connection Request.
                case open(psm: UInt16, localCIDs: [UInt16], mtu: Int, mps: Int, credits: Int, enhanced: Bool)
                /// Credit Based Reconfigure Request for these channels.
                case reconfigure(psm: UInt16, localCIDs: [UInt16], mtu: Int, mps: Int)

                var psm: UInt16 {
                    switch self {
                    case .open(let psm, _, _, _, _, _), .reconfigure(let psm, _, _, _): return psm
                    }
                }
            }
            let kind: Kind
            let waiter: Waiters<[CreditBasedChannel], L2CAPChannelError>.ID
        }
        /// Open channels by local (source) CID, and channels closing until their response.
        var channels: [UInt16: CreditBasedChannel] = [:]
        var servers: [UInt16: Server] = [:]
        var pending: [UInt8: PendingRequest] = [:]
        var nextIdentifier: UInt8 = 0

        func identifier() -> UInt8 {
            repeat { nextIdentifier &+= 1 } while nextIdentifier == 0 || pending[nextIdentifier] != nil
            return nextIdentifier
        }

        /// `count` free local CIDs, or nil when fewer are free (64 per link).
        func freeCIDs(_ count: Int) -> [UInt16]? {
            var reserved = Set<UInt16>()
            for request in pending.values {
                if case .open(_, let cids, _, _, _, _) = request.kind { reserved.formUnion(cids) }
            }
            let free = Array(HCIHost.leDynamicCIDs.lazy.filter { self.channels[$0] == nil && !reserved.contains($0) }.prefix(count))
            return free.count == count ? free : nil
        }

        /// The open channel the peer knows by `remoteCID` (its own source CID).
        func channel(remoteCID: UInt16) -> CreditBasedChannel? {
            channels.values.first { $0.remoteCID == remoteCID }
        }
    }

    /// Parameters this side announces for a channel: defaults fit one K-frame to the largest
    /// LE data PDU (MPS 247) and grant credits for at least one whole SDU. `minimum` is 23 for
    /// LE channels and 64 for enhanced ones (Vol 3, Part A, 4.22 and 4.25).
    static func channelParameters(mtu: Int, mps: Int?, credits: Int?, minimum: Int = 23) -> (mtu: Int, mps: Int, credits: Int) {
        let mtu = min(max(mtu, minimum), 65535)
        let mps = min(max(mps ?? 247, minimum), maximumMPS)
        let credits = min(max(credits ?? max(8, KFrameSegmenter.frameCount(sduSize: mtu, mps: mps)), 1), 65535)
        return (mtu, mps, credits)
    }

    /// Opens an LE credit-based channel to `psm` on link `handle` (Vol 3, Part A, 4.22).
    public func openCreditBasedChannel(handle: UInt16, psm: UInt16, mtu: Int, mps: Int? = nil, credits: Int? = nil,
                                       timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) -> CreditBasedChannel {
        if let lostReason { throw .link(.transportLost(lostReason)) }
        guard let link = links[handle] else { throw .notConnected(peer: "handle \(handle.hex)") }
        let peer = "\(link.peer.address)"
        guard let cid = link.creditBased.freeCIDs(1)?.first else { throw .noFreeCID(peer: peer) }
        let p = Self.channelParameters(mtu: mtu, mps: mps, credits: credits)
        let result = await channelRequest(
            link: link, .open(psm: psm, localCIDs: [cid], mtu: p.mtu, mps: p.mps, credits: p.credits, enhanced: false), timeout: timeout, cid: cid,
            body: .leCreditBasedConnectionRequest(psm: psm, sourceCID: cid, mtu: UInt16(p.mtu), mps: UInt16(p.mps), initialCredits: UInt16(p.credits)))
        guard let channel = try result.get().first else { throw .invalidResponse(peer: peer, psm: psm, detail: "no channel") }
        return channel
    }

    /// Sends a request of this side on the signaling channel and waits, at most `timeout`, for
    /// the response that ends it (`finishRequest`). A cancelled caller gets `.cancelled` at
    /// once; a response that comes later finds its request gone and is ignored.
    func channelRequest(link: Link, _ kind: CreditBasedLinkState.PendingRequest.Kind, timeout: Duration, cid: UInt16,
                        body: L2CAPSignalingCommand.Body) async -> Result<[CreditBasedChannel], L2CAPChannelError> {
        let state = link.creditBased
        // Requests given up on (timed out, cancelled) free their identifier and CIDs here.
        state.pending = state.pending.filter { channelRequestWaiters.contains($0.value.waiter) }
        let identifier = state.identifier()
        let peer = "\(link.peer.address)", psm = kind.psm
        var waiter: Waiters<[CreditBasedChannel], L2CAPChannelError>.ID?
        let result = await channelRequestWaiters.wait(
            deadline: (timeout, .failure(.responseTimeout(peer: peer, psm: psm, after: timeout))),
            cancelled: { _ in .failure(.cancelled(peer: peer, cid: cid)) }) { id in
            waiter = id
            state.pending[identifier] = CreditBasedLinkState.PendingRequest(kind: kind, waiter: id)
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: identifier, body: body))
        }
        if case .failure = result, let waiter, state.pending[identifier]?.waiter == waiter { state.pending[identifier] = nil }
        return result
    }

    /// The request `identifier` answers, while its caller still waits (nil for a late answer).
    func waitingRequest(_ link: Link, identifier: UInt8) -> CreditBasedLinkState.PendingRequest? {
        guard let request = link.creditBased.pending[identifier] else { return nil }
        guard channelRequestWaiters.contains(request.waiter) else {
            link.creditBased.pending[identifier] = nil
            return nil
        }
        return request
    }

    /// Ends request `identifier` of `link` with `result`.
    func finishRequest(_ link: Link, identifier: UInt8, _ result: Result<[CreditBasedChannel], L2CAPChannelError>) {
        guard let request = link.creditBased.pending.removeValue(forKey: identifier) else { return }
        channelRequestWaiters.resume(request.waiter, with: result)
    }

    /// Accepts the peer's channels on `psm` of link `handle`: `accept` gets each new channel,
    /// opened with an LE or an enhanced Credit Based Connection Request. `securityRefusal`,
    /// asked on the executor at each request, refuses it with the result it gives (for a link
    /// below the security the server needs; nil accepts).
    public func registerCreditBasedServer(handle: UInt16, psm: UInt16, mtu: Int, mps: Int? = nil, credits: Int? = nil,
                                          securityRefusal: (@Sendable () -> CreditBasedConnectionResult?)? = nil,
                                          accept: @escaping @Sendable (CreditBasedChannel) -> Void) throws(L2CAPChannelError) {
        guard let link = links[handle] else { throw .notConnected(peer: "handle \(handle.hex)") }
        guard link.creditBased.servers[psm] == nil else { throw .psmInUse(psm: psm) }
        let p = Self.channelParameters(mtu: mtu, mps: mps, credits: credits)
        link.creditBased.servers[psm] = CreditBasedLinkState.Server(mtu: p.mtu, mps: p.mps, credits: p.credits,
                                                                    securityRefusal: securityRefusal, accept: accept)
    }

    public func unregisterCreditBasedServer(handle: UInt16, psm: UInt16) {
        links[handle]?.creditBased.servers[psm] = nil
    }

    // MARK: - From routing

    /// Handles the credit-based and disconnection commands; false for a command it does not
    /// know (the caller rejects it).
    func handleCreditBasedSignaling(link: Link, _ command: L2CAPSignalingCommand) -> Bool {
        let state = link.creditBased
        switch command.body {
        case .leCreditBasedConnectionRequest(let psm, let scid, let mtu, let mps, let credits):
            acceptRequest(link: link, identifier: command.identifier, psm: psm, remoteCID: scid, mtu: Int(mtu), mps: Int(mps), credits: Int(credits))
        case .leCreditBasedConnectionResponse(let dcid, let mtu, let mps, let credits, let result):
            guard let request = waitingRequest(link, identifier: command.identifier),
                  case .open(let psm, let cids, let ownMTU, let ownMPS, let ownCredits, false) = request.kind, let localCID = cids.first else {
                // A late answer to a request given up on (timed out or cancelled).
                if result == 0, Self.leDynamicCIDs.contains(dcid) {
                    logger.log(.info, "\(link.peer.address): ignoring a late LE credit-based response (channel \(dcid.hex)) to a request given up on")
                }
                return true
            }
            let peer = "\(link.peer.address)"
            let outcome = CreditBasedConnectionResult(rawValue: result)
            guard outcome == .success else {
                finishRequest(link, identifier: command.identifier, .failure(.refused(peer: peer, psm: psm, result: outcome)))
                return true
            }
            guard Self.leDynamicCIDs.contains(dcid), mtu >= 23, Self.leMPSRange.contains(Int(mps)) else {
                finishRequest(link, identifier: command.identifier, .failure(.invalidResponse(
                    peer: peer, psm: psm, detail: "destination CID \(dcid.hex), MTU \(mtu), MPS \(mps)")))
                return true
            }
            let channel = CreditBasedChannel(host: self, handle: link.handle, peer: link.peer, psm: psm, localCID: localCID, remoteCID: dcid,
                                             mtu: ownMTU, mps: ownMPS, receiveWindow: ownCredits, peerMTU: Int(mtu), peerMPS: Int(mps), peerCredits: Int(credits))
            state.channels[localCID] = channel
            finishRequest(link, identifier: command.identifier, .success([channel]))
        case .creditBasedConnectionRequest, .creditBasedConnectionResponse, .creditBasedReconfigureRequest, .creditBasedReconfigureResponse:
            handleEnhancedCreditBasedSignaling(link: link, command)
        case .flowControlCreditIndication(let cid, let credits):
            // The peer's Source CID: our destination (Vol 3, Part A, 4.24).
            if let channel = state.channel(remoteCID: cid) {
                channel.assumeIsolated { $0.peerGranted(Int(credits)) }
            }
        case .disconnectionRequest(let dcid, let scid):
            guard let channel = state.channels[dcid], channel.remoteCID == scid else {
                // Vol 3, Part A, 4.1: reason 0x0002, invalid CID in request, with both CIDs.
                var data: [UInt8] = []
                data.appendLE(dcid); data.appendLE(scid)
                sendSignaling(link: link, L2CAPSignalingCommand(identifier: command.identifier, body: .commandReject(reason: 0x0002, data: data)))
                return true
            }
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: command.identifier, body: .disconnectionResponse(destinationCID: dcid, sourceCID: scid)))
            state.channels[dcid] = nil
            channel.assumeIsolated { $0.end(.closedByPeer(peer: $0.peerName, cid: dcid), sendDisconnect: false) }
        case .disconnectionResponse(_, let scid):
            if let channel = state.channels.removeValue(forKey: scid) {
                channel.assumeIsolated { $0.disconnectAnswered() }
            }
        case .commandReject(let reason, _):
            if let request = waitingRequest(link, identifier: command.identifier) {
                finishRequest(link, identifier: command.identifier, .failure(.commandRejected(peer: "\(link.peer.address)", psm: request.kind.psm, reason: reason)))
            }
        default:
            return false
        }
        return true
    }

    /// The peer opens a channel to us (Vol 3, Part A, 4.22-4.23 and 10.1).
    func acceptRequest(link: Link, identifier: UInt8, psm: UInt16, remoteCID: UInt16, mtu: Int, mps: Int, credits: Int) {
        let state = link.creditBased
        func answer(_ result: CreditBasedConnectionResult, dcid: UInt16 = 0, server: CreditBasedLinkState.Server? = nil) {
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: identifier, body: .leCreditBasedConnectionResponse(
                destinationCID: dcid, mtu: UInt16(server?.mtu ?? 0), mps: UInt16(server?.mps ?? 0),
                initialCredits: UInt16(server?.credits ?? 0), result: result.rawValue)))
        }
        guard let server = state.servers[psm] else { return answer(.psmNotSupported) }
        if let refusal = securityRefusal(server, link: link, psm: psm) { return answer(refusal) }
        guard Self.leDynamicCIDs.contains(remoteCID) else { return answer(.invalidSourceCID) }
        guard state.channel(remoteCID: remoteCID) == nil else { return answer(.sourceCIDAlreadyAllocated) }
        guard mtu >= 23, Self.leMPSRange.contains(mps) else { return answer(.unacceptableParameters) }
        guard let cid = state.freeCIDs(1)?.first else { return answer(.noResources) }
        let channel = CreditBasedChannel(host: self, handle: link.handle, peer: link.peer, psm: psm, localCID: cid, remoteCID: remoteCID,
                                         mtu: server.mtu, mps: server.mps, receiveWindow: server.credits, peerMTU: mtu, peerMPS: mps, peerCredits: credits)
        state.channels[cid] = channel
        answer(.success, dcid: cid, server: server)
        logger.log(.info, "\(link.peer.address): accepted L2CAP channel on PSM \(psm.hex) (local CID \(cid.hex), peer MTU \(mtu), MPS \(mps), \(credits) credits)")
        server.accept(channel)
    }

    /// The server's refusal of a request on `link` for lack of security (Vol 3, Part A, 4.23
    /// and 4.26: 0x0005, 0x0007, 0x0008), logged; nil when the link has what it needs.
    func securityRefusal(_ server: CreditBasedLinkState.Server, link: Link, psm: UInt16) -> CreditBasedConnectionResult? {
        guard let refusal = server.securityRefusal?() else { return nil }
        logger.log(.info, "\(link.peer.address): refused an L2CAP channel on PSM \(psm.hex) for lack of security: \(refusal); the peer may raise the link's security (pair or encrypt) and ask again")
        return refusal
    }

    // MARK: - From channels

    func sendCreditIndication(handle: UInt16, cid: UInt16, credits: UInt16) {
        guard let link = links[handle] else { return }
        sendSignaling(link: link, L2CAPSignalingCommand(identifier: link.creditBased.identifier(), body: .flowControlCreditIndication(cid: cid, credits: credits)))
    }

    /// A channel ended: forget it, or for a local close send Disconnection Request and keep
    /// it until the response routes back.
    func creditBasedChannelEnded(handle: UInt16, localCID: UInt16, remoteCID: UInt16, sendDisconnect: Bool) {
        guard let link = links[handle] else { return }
        guard sendDisconnect else {
            link.creditBased.channels[localCID] = nil
            return
        }
        sendSignaling(link: link, L2CAPSignalingCommand(identifier: link.creditBased.identifier(), body: .disconnectionRequest(destinationCID: remoteCID, sourceCID: localCID)))
    }

    /// K-frames to `remoteCID` found no controller buffer within the ACL send timeout and
    /// were dropped: the SDU they carried is broken, so the channel's other K-frames leave the
    /// link's queue (sent after the gap they would reach the peer as a broken SDU) and the
    /// channel ends with `LinkError.sendTimeout` (`timedOutCreditBasedChannels` counts it).
    func creditBasedKFramesTimedOut(link: Link, remoteCID: UInt16) {
        removeQueued(link: link, channelID: remoteCID)
        guard let channel = link.creditBased.channels.values.first(where: { $0.remoteCID == remoteCID }) else { return }
        safeguards.timedOutChannels += 1
        let error = sendTimeoutError(link: link, channelID: remoteCID)
        channel.assumeIsolated { $0.kFramesTimedOut(error) }
    }

    /// The link is gone: fail every pending request and every channel at once.
    func creditBasedLinkLost(_ link: Link, error: LinkError) {
        let state = link.creditBased
        let waiters = state.pending.values.map(\.waiter).sorted()
        state.pending.removeAll()
        for waiter in waiters { channelRequestWaiters.resume(waiter, with: .failure(.link(error))) }
        let channels = Array(state.channels.values)
        state.channels.removeAll()
        state.servers.removeAll()
        for channel in channels { channel.assumeIsolated { $0.linkLost(error) } }
    }
}
