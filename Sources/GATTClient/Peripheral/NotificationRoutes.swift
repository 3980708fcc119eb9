/// The notification table: value handle -> the broadcasters of its subscribers. The bearer's
/// value handler runs on the adapter queue and calls `deliver` directly: a dictionary lookup
/// and a yield, no actor hop.
final class NotificationRoutes: @unchecked Sendable { // read and written only on the adapter queue (the Peripheral's executor, where the bearer's value handler also runs)
    final class Route {
        let notifications: Broadcaster<[UInt8]>
        let indications: Broadcaster<[UInt8]>
        init(executor: AdapterExecutor) {
            notifications = Broadcaster(executor: executor)
            indications = Broadcaster(executor: executor)
        }
        /// The CCCD value the subscribers need: bit 0 notifications, bit 1 indications.
        var configuration: UInt16 {
            (notifications.subscriberCount > 0 ? 0x0001 : 0) | (indications.subscriberCount > 0 ? 0x0002 : 0)
        }
    }

    var routes: [UInt16: Route] = [:]
    /// The Service Changed value handle, when configured, and what to do with its indications.
    var serviceChangedHandle: UInt16?
    var serviceChanged: (@Sendable ([UInt8]) -> Void)?

    @inline(__always)
    func deliver(_ event: ATTValueEvent) {
        if let route = routes[event.handle] {
            let broadcaster = event.isIndication ? route.indications : route.notifications
            // The value is copied out of the SDU only when someone listens.
            if broadcaster.subscriberCount > 0 { broadcaster.yield(event.value) }
        } else if event.handle == serviceChangedHandle, event.isIndication {
            serviceChanged?(event.value)
        }
    }

    /// Ends every stream with `error`.
    func finishAll(_ error: GATTError) {
        for r in routes.values {
            r.notifications.finish(throwing: error)
            r.indications.finish(throwing: error)
        }
    }
}

/// Passes an L2CAP channel through and tells its owner when it closes (the bearer takes the
/// channel's handlers; this keeps the close visible to the Peripheral too).
final class ObservedChannel: L2CAPChannel, @unchecked Sendable { // `onClose` is set once right after init and read only when the channel closes, on the adapter queue
    let base: any L2CAPChannel
    var onClose: (@Sendable (ObservedChannel, LinkError) -> Void)?
    init(_ base: any L2CAPChannel) { self.base = base }
    var executor: AdapterExecutor { base.executor }
    var peerDescription: String { base.peerDescription }
    func send(_ sdu: [UInt8]) async throws(LinkError) { try await base.send(sdu) }
    func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        base.setHandlers(receive: receive, close: { [weak self] error in
            close(error)
            if let self { self.onClose?(self, error) }
        })
    }
}
