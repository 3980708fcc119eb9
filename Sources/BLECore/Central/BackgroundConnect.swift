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

    /// What the loop and the central read and change, on the adapter executor only; the sets
    /// change only through `add` and `remove`.
    struct State {
        /// The callers' sets, oldest first (`add`, `remove`).
        fileprivate(set) var subscriptions: [Subscription] = []
        /// How many sets want each device.
        fileprivate var wanted: [LEAddress: Int] = [:]
        /// The union of the sets.
        fileprivate(set) var peers: Set<LEAddress> = []
        /// Entries the controller's list holds; nil until read.
        var capacity: Int?
        /// What the controller's list holds now (as far as this central changed it).
        var loaded: [LEAddress]?
        /// The device the pending attempt connected to (from its connection complete event).
        var completedPeer: LEAddress?
        /// A direct connect, or a change of the sets, asked the pending attempt to make way.
        var preempted = false
        var loop: Task<Void, Never>?
        /// Known devices past the list's size, and the scan that connects them.
        var overflow: Set<LEAddress> = []
        var overflowScan: Task<Void, Never>?
        /// Whether the controller initiates while it scans: nil until an attempt made during a
        /// scan showed it (Central+BackgroundWindows.swift). Once false, every attempt during a
        /// scan is bounded by the initiating window.
        var initiatesWhileScanning: Bool?
        /// The last attempt stopped the scan: the scan runs for its window before the next one.
        var scanTurnDue = false
    }
    /// Touched only on the adapter executor, from the Central's isolation.
    let state: QueueConfined<State>

    init(queue: DispatchQueue) { state = QueueConfined(State(), on: queue) }

    /// The known devices in a fixed order (the first ones go on the list): by address, public first.
    var ordered: [LEAddress] {
        state.value.peers.sorted { ($0.address, $0.type.isRandom ? 1 : 0) < ($1.address, $1.type.isRandom ? 1 : 0) }
    }

    /// The create-connection parameters of the attempt: the oldest set's.
    var parameters: ConnectionRequestParameters { state.value.subscriptions.first?.parameters ?? .default }

    /// Adds a caller's set; true when the union grew.
    func add(_ subscription: Subscription) -> Bool {
        state.value.subscriptions.append(subscription)
        var grew = false
        for peer in subscription.peers {
            state.value.wanted[peer, default: 0] += 1
            if state.value.peers.insert(peer).inserted { grew = true }
        }
        return grew
    }

    /// Removes a caller's set; true when the union shrank. False for a set no longer here.
    func remove(_ subscription: Subscription) -> Bool {
        guard let index = state.value.subscriptions.firstIndex(where: { $0 === subscription }) else { return false }
        state.value.subscriptions.remove(at: index)
        var shrank = false
        for peer in subscription.peers {
            let count = (state.value.wanted[peer] ?? 1) - 1
            if count > 0 {
                state.value.wanted[peer] = count
            } else {
                state.value.wanted[peer] = nil
                state.value.peers.remove(peer)
                shrank = true
            }
        }
        return shrank
    }

    /// Gives a link to `peer` to the oldest set that wants it and still listens; false when
    /// none does.
    func deliver(_ connection: Connection) -> Bool {
        for subscription in state.value.subscriptions where subscription.peers.contains(connection.peer) {
            if case .enqueued = subscription.output.yield(connection) { return true }
        }
        return false
    }

    /// Ends every set's stream (with `error` when given).
    func finishAll(error: (any Error)?) {
        let ending = state.value.subscriptions
        state.value.subscriptions = []
        state.value.wanted = [:]
        state.value.peers = []
        for subscription in ending { subscription.output.finish(throwing: error) }
    }
}
