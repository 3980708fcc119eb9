/// A `CreditBasedChannel` seen as an `L2CAPChannel`, so protocols written for one (an
/// `ATTBearer` on an enhanced ATT bearer, Core Spec 5.4 Vol 3, Part G, 5.3.x) run over it:
/// SDUs are handed to the receive handler as they complete and their credits go back at once.
///
///     let bearer = ATTBearer(channel: CreditBasedSDUChannel(channel), scheduler: scheduler)
public final class CreditBasedSDUChannel: L2CAPChannel {
    public let channel: CreditBasedChannel

    public init(_ channel: CreditBasedChannel) {
        self.channel = channel
    }

    public var executor: AdapterExecutor { channel.executor }
    public var peerDescription: String { "\(channel.peer.address)" }

    public func send(_ sdu: [UInt8]) async throws(LinkError) {
        do throws(L2CAPChannelError) {
            try await channel.send(sdu)
        } catch {
            throw await channel.linkError(error)
        }
    }

    public func enqueue(_ sdu: [UInt8]) {
        channel.runIsolated(sdu) { channel, sdu in channel.enqueue(sdu) }
    }

    /// A background task of the link's host (`HCIHost.background`), which `Central.close()`
    /// cancels and awaits: an enhanced ATT bearer's transmissions run there.
    public func adoptTask(_ work: @escaping @Sendable () async -> Void) -> Bool {
        guard let host = channel.assumeIsolated({ $0.host }) else { return false }
        host.background { _ in await work() }
        return true
    }

    public func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        setSliceHandlers(receive: { receive(Array($0)) }, close: close)
    }

    public func setSliceHandlers(receive: @escaping @Sendable (ArraySlice<UInt8>) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        channel.assumeIsolated { $0.consume(receive: receive, end: close) }
    }
}

extension CreditBasedChannel {
    /// Hands every SDU, those waiting first, to `receive` and the end to `end` (once).
    func consume(receive: @escaping @Sendable (ArraySlice<UInt8>) -> Void, end: @escaping @Sendable (LinkError) -> Void) {
        if let endError, inbox.isEmpty { return end(linkError(endError)) }
        let waiting = inbox
        inbox = []
        var frames = 0
        for entry in waiting {
            frames += entry.frames
            receive(entry.sdu[...])
        }
        _ = credits.handle(.partialSDUAwaited(framesInSDU: reassembler.framesInSDU))
        perform(credits.handle(.consumed(frames: frames, all: false)))
        sduHandler = receive
        endHandler = end
        if let endError { self.endHandler = nil; end(linkError(endError)) }
    }

    /// Queues one SDU without waiting for credits, in order after earlier ones (for ATT
    /// responses and confirmations); an SDU over the peer's MTU or on a closing or closed channel is dropped.
    func enqueue(_ sdu: [UInt8]) {
        guard endError == nil, !closing, sdu.count <= peerMTU else { return }
        queue(PendingSDU(sdu))
    }

    /// The channel's error as the link error an `L2CAPChannel` reports.
    func linkError(_ error: L2CAPChannelError) -> LinkError {
        switch error {
        case .link(let error): return error
        case .cancelled: return .cancelled(peer: peer.address, handle: handle, channelID: localCID)
        case .sduTooLarge(let size, let mtu): return .tooLarge(size: size, maximum: mtu)
        case .creditTimeout(_, _, let after), .linkQueueTimeout(_, _, let after):
            return .sendTimeout(peer: peer.address, handle: handle, channelID: localCID, milliseconds: Int(after.components.seconds * 1000 + after.components.attoseconds / 1_000_000_000_000_000))
        default: return .closed(peer: peer.address, handle: handle)
        }
    }
}
