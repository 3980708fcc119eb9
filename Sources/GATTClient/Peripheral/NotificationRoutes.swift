import Dispatch
import BLECore
import BLETransport
import Synchronization
import ATT

/// The notification table: value handle -> the multicast buffers of its subscribers. The
/// bearer's value handler runs on the adapter queue and calls `deliver` directly: a scan of a
/// small flat table and a yield, no actor hop, no hashing. The table is confined to the adapter
/// queue (the Peripheral's executor, where the bearer's value handler also runs), checked in
/// debug builds.
final class NotificationRoutes: Sendable {
    final class Route: Sendable {
        let notifications: MulticastBuffer<[UInt8]>
        let indications: MulticastBuffer<[UInt8]>
        init(executor: AdapterExecutor, handle: UInt16, peer: String) {
            notifications = MulticastBuffer(executor: executor, name: "\(peer): notifications of handle \(handle.hex)")
            indications = MulticastBuffer(executor: executor, name: "\(peer): indications of handle \(handle.hex)")
        }
        /// The CCCD value the subscribers need: bit 0 notifications, bit 1 indications.
        var configuration: UInt16 {
            (notifications.subscriberCount > 0 ? 0x0001 : 0) | (indications.subscriberCount > 0 ? 0x0002 : 0)
        }
    }

    struct Table {
        /// Value handles and their routes, in parallel (a peripheral has few subscribed
        /// characteristics: a linear scan of `handles` beats hashing).
        var handles: [UInt16] = []
        var entries: [Route] = []
        /// The Service Changed value handle, when configured, and what to do with its indications.
        var serviceChangedHandle: UInt16?
        var serviceChanged: (@Sendable ([UInt8]) -> Void)?
    }
    private let table: QueueConfined<Table>

    /// An empty table confined to `queue`.
    init(queue: DispatchQueue) { table = QueueConfined(Table(), on: queue) }

    var handles: [UInt16] { table.value.handles }
    var serviceChangedHandle: UInt16? {
        get { table.value.serviceChangedHandle }
        set { table.value.serviceChangedHandle = newValue }
    }
    var serviceChanged: (@Sendable ([UInt8]) -> Void)? {
        get { table.value.serviceChanged }
        set { table.value.serviceChanged = newValue }
    }

    func route(_ handle: UInt16) -> Route? {
        guard let i = table.value.handles.firstIndex(of: handle) else { return nil }
        return table.value.entries[i]
    }

    func add(_ route: Route, for handle: UInt16) {
        if let i = table.value.handles.firstIndex(of: handle) { table.value.entries[i] = route; return }
        table.value.handles.append(handle)
        table.value.entries.append(route)
    }

    func remove(_ handle: UInt16) -> Route? {
        guard let i = table.value.handles.firstIndex(of: handle) else { return nil }
        table.value.handles.remove(at: i)
        return table.value.entries.remove(at: i)
    }

    /// A Handle Value Notification whose bytes are valid only during the call (the bearer's
    /// notification handler).
    @inline(__always)
    func deliverNotification(handle: UInt16, value: UnsafeRawBufferPointer) {
        guard let i = table.value.handles.firstIndex(of: handle) else { return }
        let buffer = table.value.entries[i].notifications
        // The value is copied out of the received bytes only when someone listens.
        if buffer.subscriberCount > 0 { buffer.yield(Array(value)) }
    }

    /// A Handle Value Indication (the bearer's indication handler): `confirm` runs once every
    /// subscriber's buffer holds the value, at once when none is full.
    func deliverIndication(_ event: ATTValueEvent, confirm: @escaping @Sendable () -> Void) {
        if let i = table.value.handles.firstIndex(of: event.handle) {
            let buffer = table.value.entries[i].indications
            if buffer.subscriberCount > 0 {
                buffer.yield(event.value, whenAccepted: confirm)
                return
            }
        }
        if event.handle == table.value.serviceChangedHandle, let serviceChanged = table.value.serviceChanged { serviceChanged(event.value) }
        confirm()
    }

    /// Ends every stream with `error`.
    func finishAll(_ error: GATTError) {
        let entries = table.value.entries
        for r in entries {
            r.notifications.finish(throwing: error)
            r.indications.finish(throwing: error)
        }
    }
}

/// Passes an L2CAP channel through and tells its owner when it closes (the bearer takes the
/// channel's handlers; this keeps the close visible to the Peripheral too).
final class ObservedChannel: L2CAPChannel, Sendable {
    let base: any L2CAPChannel
    /// Set right after init and read when the channel closes: a lock taken twice per link,
    /// never per PDU.
    private let closeObserver = Mutex<(@Sendable (ObservedChannel, LinkError) -> Void)?>(nil)
    var onClose: (@Sendable (ObservedChannel, LinkError) -> Void)? {
        get { closeObserver.withLock { $0 } }
        set { closeObserver.withLock { $0 = newValue } }
    }
    init(_ base: any L2CAPChannel) { self.base = base }
    var executor: AdapterExecutor { base.executor }
    var peerDescription: String { base.peerDescription }
    func send(_ sdu: [UInt8]) async throws(LinkError) { try await base.send(sdu) }
    /// Forwarded, so the bearer's responses and confirmations leave in order through the
    /// channel's own queue (not a task each, the protocol's default).
    func enqueue(_ sdu: [UInt8]) { base.enqueue(sdu) }
    func adoptTask(_ work: @escaping @Sendable () async -> Void) -> Bool { base.adoptTask(work) }
    func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        base.setHandlers(receive: receive, close: { [weak self] error in
            close(error)
            if let self { self.onClose?(self, error) }
        })
    }
    func setRawReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        base.setRawReceiver(receiver)
    }
    func limitInboundSDUs(to maximum: Int, refused: @escaping @Sendable (_ head: [UInt8], _ size: Int) -> Void) {
        base.limitInboundSDUs(to: maximum, refused: refused)
    }
    func setSliceHandlers(receive: @escaping @Sendable (ArraySlice<UInt8>) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        base.setSliceHandlers(receive: receive, close: { [weak self] error in
            close(error)
            if let self { self.onClose?(self, error) }
        })
    }
}
