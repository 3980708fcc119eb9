import BLEWire

/// Why a link (and every channel on it) went away, or why an operation on it failed.
public enum LinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Disconnection Complete arrived for the link; `reason` is the HCI reason.
    case disconnected(peer: BluetoothAddress, reason: HCIStatus)
    /// The transport to the controller was lost.
    case transportLost(String)
    /// The controller was reset, after Hardware Error `hardwareError` when it reported one:
    /// every link is gone.
    case controllerReset(peer: BluetoothAddress, hardwareError: UInt8?)
    /// The channel was closed by this host, or link `handle` is not (or no longer) known.
    case closed(peer: BluetoothAddress?, handle: UInt16?)
    /// The SDU is larger than the channel can carry.
    case tooLarge(size: Int, maximum: Int)
    /// The task sending an SDU on channel `channelID` of link `handle` was cancelled: it
    /// stopped waiting; fragments already queued may still go out. The link is unaffected.
    case cancelled(peer: BluetoothAddress, handle: UInt16, channelID: UInt16)
    /// A PDU on channel `channelID` of link `handle` found no controller buffer within the
    /// host's send timeout: the peer has stopped acknowledging the link's packets. Not sent.
    case sendTimeout(peer: BluetoothAddress, handle: UInt16, channelID: UInt16, milliseconds: Int)
    /// Link `handle`'s send queue is at one of its bounds (`bound` says which and how full):
    /// the PDU was refused at once.
    case queueFull(peer: BluetoothAddress, handle: UInt16, channelID: UInt16, bound: LinkQueueBound)

    public var description: String {
        switch self {
        case .disconnected(let peer, let reason): return "\(peer) disconnected: \(reason)"
        case .transportLost(let why): return "link lost with the transport: \(why)"
        case .controllerReset(let peer, let code?):
            return "the link to \(peer) ended: the controller reported Hardware Error \(code.hex) and must be reset; power the adapter on again (a reconnect policy restores the link then)"
        case .controllerReset(let peer, nil):
            return "the link to \(peer) ended: the controller was reset; a reconnect policy restores it once the adapter is powered on"
        case .closed(let peer?, _): return "the channel to \(peer) was closed by this host; connect again to use it"
        case .closed(nil, let handle):
            return "no link with handle \(handle.map { $0.hex } ?? "(none)") is open (it was closed); connect again"
        case .tooLarge(let size, let max): return "\(size)-byte SDU exceeds the channel's maximum of \(max) bytes"
        case .cancelled(let peer, let handle, let cid):
            return "sending on L2CAP channel \(cid.hex) of handle \(handle.hex) to \(peer) was cancelled; what was already queued may still be sent"
        case .sendTimeout(let peer, let handle, let cid, let ms):
            return "a PDU on L2CAP channel \(cid.hex) of handle \(handle.hex) to \(peer) found no controller buffer within \(ms) ms: the peer stopped acknowledging packets (out of range or hung?); disconnect it or try later"
        case .queueFull(let peer, let handle, let cid, let bound):
            return "the send queue of handle \(handle.hex) to \(peer) is full (\(bound)); the PDU on L2CAP channel \(cid.hex) was refused: the peer takes data slower than it is sent, so wait for earlier sends before sending more, disconnect it, or raise the bound with HCIHost.setACLLimits"
        }
    }
}

/// Which bound of a link's send queue refused a PDU (`LinkError.queueFull`), with how much
/// the queue held and the bound (`HCIHost.setACLLimits`).
public enum LinkQueueBound: Sendable, Equatable, CustomStringConvertible {
    /// The queue held `queued` bytes of ACL data; with the PDU it would pass `limit` bytes.
    case bytes(queued: Int, limit: Int)
    /// The queue held `queued` PDUs waiting to be sent, the most it holds (`limit`).
    case pdus(queued: Int, limit: Int)

    public var description: String {
        switch self {
        case .bytes(let queued, let limit): "byte bound: \(queued) of \(limit) bytes waiting"
        case .pdus(let queued, let limit): "PDU bound: \(queued) of \(limit) PDUs waiting"
        }
    }
}

/// One L2CAP channel of one link carrying whole SDUs for an upper protocol: the ATT fixed
/// channel (CID 0x0004) over our own ACL path, or a kernel L2CAP socket. All calls happen
/// on the adapter's executor, and so do the handlers.
///
///     channel.setHandlers(receive: { sdu in bearer.assumeIsolated { $0.receive(sdu) } },
///                         close: { error in bearer.assumeIsolated { $0.close(error) } })
public protocol L2CAPChannel: AnyObject, Sendable {
    /// The executor every call and handler runs on.
    var executor: AdapterExecutor { get }
    /// A name for the peer in messages ("F0:F1:F2:F3:F4:F5").
    var peerDescription: String { get }
    /// Queues one SDU and returns once it has been handed to the controller (or socket):
    /// the back-pressure that flow-controls Write Commands. Never drops. A cancelled caller
    /// stops waiting with `LinkError.cancelled`.
    func send(_ sdu: [UInt8]) async throws(LinkError)
    /// Queues one SDU without waiting (see the extension's default).
    func enqueue(_ sdu: [UInt8])
    /// Runs `work` in a task owned by the link, which `Central.close()` cancels and waits
    /// for, and returns true; returns false when the channel has no such owner (the default),
    /// and the caller runs `work` in a task of its own. Called on the executor.
    ///
    ///     if !channel.adoptTask({ await bearer.runMTUExchange() }) { Task { await bearer.runMTUExchange() } }
    func adoptTask(_ work: @escaping @Sendable () async -> Void) -> Bool
    /// Installs the handlers: `receive` for every inbound SDU in order, `close` once when the
    /// channel ends. Handlers run on `executor`'s queue.
    func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void)
    /// Like `setHandlers`, with each SDU handed over as a view of the received bytes (its
    /// indices are not 0-based): channels that reassemble from a buffer pass it without a
    /// copy. The default wraps `setHandlers`.
    func setSliceHandlers(receive: @escaping @Sendable (ArraySlice<UInt8>) -> Void, close: @escaping @Sendable (LinkError) -> Void)
    /// Installs a receiver offered SDUs as raw bytes, valid only during the call, before the
    /// receive handler: when it returns true the SDU is consumed, otherwise it goes to the
    /// receive handler as usual. Channels offer it what they can pass without building an
    /// array (a PDU that arrived whole in one ACL packet); others ignore it (the default).
    ///
    ///     channel.setRawReceiver { sdu in sdu.first == 0x1B ? take(sdu) : false }
    func setRawReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool)
    /// Bounds inbound SDUs to `maximum` bytes (an ATT bearer passes its ATT_MTU, Vol 3,
    /// Part F, 3.2.8). A channel that reassembles refuses a longer PDU at its first fragment,
    /// never buffering it, and calls `refused` with the first octets it carried (at most 8:
    /// an ATT opcode and handle fit; none when the first fragment ended within the L2CAP header)
    /// and the size it announced. Channels that cannot bound their SDUs ignore it (the
    /// default): the receiver checks the size itself. Called on `executor`.
    ///
    ///     channel.limitInboundSDUs(to: 247) { head, size in log("refused \(size) bytes, opcode \(head.first ?? 0)") }
    func limitInboundSDUs(to maximum: Int, refused: @escaping @Sendable (_ head: [UInt8], _ size: Int) -> Void)
}

extension L2CAPChannel {
    public func setRawReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {}

    public func limitInboundSDUs(to maximum: Int, refused: @escaping @Sendable (_ head: [UInt8], _ size: Int) -> Void) {}

    public func setSliceHandlers(receive: @escaping @Sendable (ArraySlice<UInt8>) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        setHandlers(receive: { receive($0[...]) }, close: close)
    }

    /// Queues one SDU without waiting, in order with everything sent before it on this
    /// executor: for the responses and confirmations a bearer sends on its own. Called on the
    /// executor. Channels that can queue synchronously override it.
    public func enqueue(_ sdu: [UInt8]) {
        Task { try? await self.send(sdu) }
    }

    public func adoptTask(_ work: @escaping @Sendable () async -> Void) -> Bool { false }

    /// Runs `work` in a task the link owns (`adoptTask`), or in a task of its own when the
    /// channel has no owner. Called on the executor.
    ///
    ///     channel.runTask { await bearer.runMTUExchange() }
    public func runTask(_ work: @escaping @Sendable () async -> Void) {
        if !adoptTask(work) { Task { await work() } }
    }
}
