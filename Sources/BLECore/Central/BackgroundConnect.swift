import BLETransport
import BLEWire
import Dispatch

/// The central's background connections (Central+Background.swift): every caller's set of
/// known devices over one Filter Accept List. The list holds the union of the sets, each
/// device counted once per set that wants it; a device leaves when no set wants it any more.
/// A link made to a device goes to the oldest set that wants it.
final class BackgroundConnect: Sendable {
    /// One caller of `connect(whenSeen:)`: its devices and its stream.
    final class Subscription: Sendable {
        let peers: Set<LEAddress>
        let parameters: ConnectionRequestParameters
        let output: AsyncThrowingStream<Connection, any Error>.Continuation

        init(peers: Set<LEAddress>, parameters: ConnectionRequestParameters, output: AsyncThrowingStream<Connection, any Error>.Continuation) {
            self.peers = peers
            self.parameters = parameters
            self.output = output
        }
    }

    private struct State {
        var subscriptions: [Subscription] = []
        var wanted: [LEAddress: Int] = [:]
        var peers: Set<LEAddress> = []
        var capacity: Int?
        var loaded: [LEAddress]?
        var completedPeer: LEAddress?
        var preempted = false
        var loop: Task<Void, Never>?
        var overflow: Set<LEAddress> = []
        var overflowScan: Task<Void, Never>?
        var initiatesWhileScanning: Bool?
        var scanTurnDue = false
    }
    /// Touched only on the adapter executor, from the Central's isolation.
    private let state: QueueConfined<State>

    init(queue: DispatchQueue) { state = QueueConfined(State(), on: queue) }

    /// The callers' sets, oldest first.
    private(set) var subscriptions: [Subscription] {
        _read { yield state.value.subscriptions }
        _modify { yield &state.value.subscriptions }
    }
    /// How many sets want each device.
    private var wanted: [LEAddress: Int] {
        _read { yield state.value.wanted }
        _modify { yield &state.value.wanted }
    }
    /// The union of the sets.
    private(set) var peers: Set<LEAddress> {
        _read { yield state.value.peers }
        _modify { yield &state.value.peers }
    }
    /// Entries the controller's list holds; nil until read.
    var capacity: Int? {
        _read { yield state.value.capacity }
        _modify { yield &state.value.capacity }
    }
    /// What the controller's list holds now (as far as this central changed it).
    var loaded: [LEAddress]? {
        _read { yield state.value.loaded }
        _modify { yield &state.value.loaded }
    }
    /// The device the pending attempt connected to (from its connection complete event).
    var completedPeer: LEAddress? {
        _read { yield state.value.completedPeer }
        _modify { yield &state.value.completedPeer }
    }
    /// A direct connect, or a change of the sets, asked the pending attempt to make way.
    var preempted: Bool {
        _read { yield state.value.preempted }
        _modify { yield &state.value.preempted }
    }
    var loop: Task<Void, Never>? {
        _read { yield state.value.loop }
        _modify { yield &state.value.loop }
    }
    /// Known devices past the list's size, and the scan that connects them.
    var overflow: Set<LEAddress> {
        _read { yield state.value.overflow }
        _modify { yield &state.value.overflow }
    }
    var overflowScan: Task<Void, Never>? {
        _read { yield state.value.overflowScan }
        _modify { yield &state.value.overflowScan }
    }
    /// Whether the controller initiates while it scans: nil until an attempt made during a
    /// scan showed it (Central+BackgroundWindows.swift). Once false, every attempt during a
    /// scan is bounded by the initiating window.
    var initiatesWhileScanning: Bool? {
        _read { yield state.value.initiatesWhileScanning }
        _modify { yield &state.value.initiatesWhileScanning }
    }
    /// The last attempt stopped the scan: the scan runs for its window before the next one.
    var scanTurnDue: Bool {
        _read { yield state.value.scanTurnDue }
        _modify { yield &state.value.scanTurnDue }
    }

    /// The known devices in a fixed order (the first ones go on the list): by address, public first.
    var ordered: [LEAddress] {
        peers.sorted { ($0.address, $0.type.isRandom ? 1 : 0) < ($1.address, $1.type.isRandom ? 1 : 0) }
    }

    /// The create-connection parameters of the attempt: the oldest set's.
    var parameters: ConnectionRequestParameters { subscriptions.first?.parameters ?? .default }

    /// Adds a caller's set; true when the union grew.
    func add(_ subscription: Subscription) -> Bool {
        subscriptions.append(subscription)
        var grew = false
        for peer in subscription.peers {
            wanted[peer, default: 0] += 1
            if peers.insert(peer).inserted { grew = true }
        }
        return grew
    }

    /// Removes a caller's set; true when the union shrank. False for a set no longer here.
    func remove(_ subscription: Subscription) -> Bool {
        guard let index = subscriptions.firstIndex(where: { $0 === subscription }) else { return false }
        subscriptions.remove(at: index)
        var shrank = false
        for peer in subscription.peers {
            let count = (wanted[peer] ?? 1) - 1
            if count > 0 {
                wanted[peer] = count
            } else {
                wanted[peer] = nil
                peers.remove(peer)
                shrank = true
            }
        }
        return shrank
    }

    /// Gives a link to `peer` to the oldest set that wants it and still listens; false when
    /// none does.
    func deliver(_ connection: Connection) -> Bool {
        for subscription in subscriptions where subscription.peers.contains(connection.peer) {
            if case .enqueued = subscription.output.yield(connection) { return true }
        }
        return false
    }

    /// Ends every set's stream (with `error` when given).
    func finishAll(error: (any Error)?) {
        let ending = subscriptions
        subscriptions = []
        wanted = [:]
        peers = []
        for subscription in ending { subscription.output.finish(throwing: error) }
    }
}
