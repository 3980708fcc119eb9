import BLETransport
import BLEWire

/// An L2CAP fixed channel of one link over the host's own ACL path (the ATT channel 0x0004).
/// Lives on the adapter executor: the host calls `deliver` and `closed` there, the handlers
/// run there, and its state is confined to the executor's queue.
public final class FixedChannel: L2CAPChannel {
    public nonisolated let executor: AdapterExecutor
    public let handle: UInt16
    public let channelID: UInt16
    public let peer: LEAddress
    private weak let host: HCIHost?
    /// The handlers and what arrived or happened before them, on the executor's queue.
    private let state: QueueConfined<State>

    private struct State {
        var receive: (@Sendable (ArraySlice<UInt8>) -> Void)?
        var close: (@Sendable (LinkError) -> Void)?
        /// Told of each PDU the host refused as longer than `limitInboundSDUs` allows.
        var refused: (@Sendable ([UInt8], Int) -> Void)?
        /// Inbound SDUs that arrived before handlers were installed: at most 64, of at most
        /// `earlyByteLimit` bytes in all (copied, so a view never pins a larger buffer).
        var early: [ArraySlice<UInt8>] = []
        var earlyBytes = 0
        var closedError: LinkError?
    }

    /// Bytes of the SDUs held until handlers are installed (at most `earlyByteLimit`; on the executor).
    var earlyByteCount: Int { state.value.earlyBytes }
    static let earlyByteLimit = 8 * 1024

    init(host: HCIHost, handle: UInt16, channelID: UInt16, peer: LEAddress) {
        self.host = host
        self.executor = host.executor
        self.handle = handle
        self.channelID = channelID
        self.peer = peer
        self.state = QueueConfined(State(), on: host.executor.queue)
    }

    public var peerDescription: String { "\(peer.address)" }

    /// Sends the SDU on the link; the host checks on its executor that the channel is still open.
    public func send(_ sdu: [UInt8]) async throws(LinkError) {
        guard let host else { throw .closed(peer: peer.address, handle: handle) }
        try await host.sendSDU(sdu, on: self)
    }

    /// Why the channel ended (nil while open). On the executor.
    fileprivate var closedError: LinkError? { state.value.closedError }

    /// Queues the SDU on the link at once, ahead of anything enqueued on the executor later.
    public func enqueue(_ sdu: [UInt8]) {
        guard closedError == nil, let host else { return }
        let handle = self.handle, channelID = self.channelID
        host.runIsolated((handle, channelID, sdu)) { host, a in host.enqueueIfLinked(handle: a.0, channelID: a.1, payload: a.2) }
    }

    /// True while the link's send queue is at or below half its bounds (on the executor): a
    /// sender that can hold its PDUs back (the GATT server's notifications) sends only then,
    /// so the queue keeps room for the link's responses. True for a closed channel.
    package var hasSendRoom: Bool {
        guard closedError == nil, let host else { return true }
        let handle = self.handle
        return host.runIsolated(handle) { host, handle in host.linkQueueIsHalfEmpty(handle: handle) }
    }

    /// Calls `body` once, on the executor, when `hasSendRoom` turns true again, or the link
    /// is gone (at once when it is gone already). Called on the executor.
    package func whenSendRoom(_ body: @escaping @Sendable () -> Void) {
        guard closedError == nil, let host else { return body() }
        let handle = self.handle
        host.assumeIsolated { $0.whenLinkQueueHasRoom(handle: handle, body) }
    }

    /// A background task of the host (`HCIHost.background`).
    public func adoptTask(_ work: @escaping @Sendable () async -> Void) -> Bool {
        guard let host else { return false }
        host.background { _ in await work() }
        return true
    }

    public func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        setSliceHandlers(receive: { receive(Array($0)) }, close: close)
    }

    /// The SDUs arrive as views of the reassembled bytes: no copy between the ACL packet and
    /// the handler.
    public func setSliceHandlers(receive: @escaping @Sendable (ArraySlice<UInt8>) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        let pending = state.value.early
        state.value.receive = receive
        state.value.close = close
        state.value.early.removeAll()
        state.value.earlyBytes = 0
        for sdu in pending { receive(sdu) }
        if let closedError { close(closedError) }
    }

    /// The ATT channel hands the receiver to the host's inlet, which offers it every SDU
    /// whose PDU arrived whole in one ACL packet read by a byte-reading transport.
    public func setRawReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        guard closedError == nil, channelID == L2CAPChannelID.att else { return }
        host?.setATTRawReceiver(handle: handle, receiver)
    }

    /// The host bounds reassembly on this channel to `maximum` bytes (ATT only: the ATT_MTU
    /// of the link's bearer; at least 23, the LE minimum): a longer PDU is refused at its first
    /// fragment and its continuations are discarded unbuffered (`HCIHost.oversizedInboundPDUs`
    /// counts them), then `refused` gets its first octets and announced size. Until a bearer
    /// sets it, the link takes ATT PDUs of up to 517 bytes.
    public func limitInboundSDUs(to maximum: Int, refused: @escaping @Sendable (_ head: [UInt8], _ size: Int) -> Void) {
        guard closedError == nil, channelID == L2CAPChannelID.att, let host else { return }
        state.value.refused = refused
        let handle = self.handle, channelID = self.channelID
        host.assumeIsolated { $0.setMaximumInboundPDULength(handle: handle, channelID: channelID, maximum) }
    }

    /// The host refused a PDU of `size` bytes whose first fragment carried `head`.
    func refusedPDU(head: ArraySlice<UInt8>, size: Int) {
        state.value.refused?(Array(head.prefix(8)), size)
    }

    func deliver(_ sdu: ArraySlice<UInt8>) {
        if let receive = state.value.receive {
            receive(sdu)
        } else if state.value.early.count < 64, state.value.earlyBytes + sdu.count <= Self.earlyByteLimit {
            state.value.early.append(ArraySlice(Array(sdu)))
            state.value.earlyBytes += sdu.count
        }
    }

    func closed(_ error: LinkError) {
        guard closedError == nil else { return }
        state.value.closedError = error
        state.value.close?(error)
    }
}

extension HCIHost {
    /// `FixedChannel.send`: on the executor, where the channel's end is known.
    fileprivate func sendSDU(_ sdu: [UInt8], on channel: FixedChannel) async throws(LinkError) {
        if let closedError = channel.closedError { throw closedError }
        try await sendL2CAP(handle: channel.handle, channelID: channel.channelID, payload: sdu)
    }
}
