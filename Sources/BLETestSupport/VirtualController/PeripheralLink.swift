import Synchronization

/// The one link a simulated peripheral accepts (Vol 6, Part B, 4.5: a device in the Peripheral
/// role is connected to one Central here), shared by the copies of that peripheral that
/// several `VirtualController`s hear, each at its own RSSI. While one controller holds it, the
/// others' connection attempts to the device stay pending; when the link ends (a disconnect,
/// the controller's transport closed) the next pending attempt completes.
///
///     let link = PeripheralLink(); for (g, vc) in radios.enumerated() { vc.addPeripheral(SimulatedPeripheral(address: a, rssi: rssi[g], peripheralLink: link)) }
public final class PeripheralLink: Sendable {
    private struct State {
        var holder: ObjectIdentifier?
        /// Controllers that found it taken and wait for it.
        var waiting: [ObjectIdentifier: Weak] = [:]
    }

    private struct Weak: Sendable {
        weak var controller: VirtualController?
    }

    private let state = Mutex(State())

    public init() {}

    /// The controller holding the link, if any.
    public func isHeld(by controller: VirtualController) -> Bool {
        state.withLock { $0.holder == ObjectIdentifier(controller) }
    }

    /// Whether the link is free now.
    public var isFree: Bool { state.withLock { $0.holder == nil } }

    /// Takes the link for `controller`; false (and `controller` is told when it frees) when
    /// another holds it.
    func take(_ controller: VirtualController) -> Bool {
        let id = ObjectIdentifier(controller)
        return state.withLock { s in
            if s.holder == nil || s.holder == id {
                s.holder = id
                s.waiting[id] = nil
                return true
            }
            s.waiting[id] = Weak(controller: controller)
            return false
        }
    }

    /// `controller` lets the link go; the controllers waiting for it try their attempts again.
    func release(_ controller: VirtualController) {
        let waiting: [VirtualController]? = state.withLock { s in
            guard s.holder == ObjectIdentifier(controller) else { return nil }
            s.holder = nil
            defer { s.waiting = [:] }
            return s.waiting.values.compactMap(\.controller)
        }
        for c in waiting ?? [] { c.queue.async { c.tryConnectPending() } }
    }
}
