import BLEWire

/// The peripheral's side of connection parameter updates: an L2CAP Connection Parameter
/// Update Request to the central, answered by a Connection Parameter Update Response
/// (Vol 3, Part A, 4.20 and 4.21). One request per link at a time.
extension HCIHost {
    /// Sends the request on link `handle`'s LE signaling channel and waits at most `timeout`
    /// for the central's response. Returns when the central accepted; it then updates the
    /// link itself (LE Connection Update Complete follows).
    public func requestConnectionParameterUpdate(handle: UInt16, _ range: ConnectionParameterRange,
                                                 timeout: Duration) async throws(ParameterUpdateRequestError) {
        guard range.isValid else { throw .invalidParameters(range) }
        guard let link = links[handle] else { throw .link(.closed(peer: nil, handle: handle)) }
        let peer = link.peer.address
        if let earlier = parameterRequests.removeValue(forKey: handle) {
            parameterRequestWaiters.resume(earlier.waiter, with: .failure(.cancelled(peer: peer)))
        }
        // Identifiers come from the link's one signaling counter, shared with channel requests.
        let identifier = link.creditBased.identifier()
        var waiter: Waiters<Void, ParameterUpdateRequestError>.ID?
        let ms = Int(timeout.nanoseconds / 1_000_000)
        let result = await parameterRequestWaiters.wait(
            deadline: (timeout, .failure(.timeout(peer: peer, milliseconds: ms))),
            cancelled: { _ in .failure(.cancelled(peer: peer)) }) { id in
            waiter = id
            parameterRequests[handle] = (identifier, id)
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: identifier, body: .connectionParameterUpdateRequest(range)))
        }
        if let waiter, parameterRequests[handle]?.waiter == waiter { parameterRequests[handle] = nil }
        try result.get()
    }

    /// A Connection Parameter Update Response (`result` 0 accepted) or a Command Reject for
    /// request `identifier` of `link`; false when no request of ours waits for it.
    func parameterRequestAnswered(link: Link, identifier: UInt8, accepted: Bool) -> Bool {
        guard let pending = parameterRequests[link.handle], pending.identifier == identifier else { return false }
        parameterRequests[link.handle] = nil
        parameterRequestWaiters.resume(pending.waiter, with: accepted ? .success(()) : .failure(.rejected(peer: link.peer.address)))
        return true
    }

    /// The link is gone: its request fails at once.
    func parameterRequestLinkLost(_ link: Link, error: LinkError) {
        guard let pending = parameterRequests.removeValue(forKey: link.handle) else { return }
        parameterRequestWaiters.resume(pending.waiter, with: .failure(.link(error)))
    }
}
