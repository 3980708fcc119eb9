import BLEWire
import BLETransport

/// What happens to an advertising set (`AdvertisingSet.events()`).
public enum AdvertisingEvent: Sendable, CustomStringConvertible {
    /// A central connected to the set, which stopped advertising. The link is also offered
    /// by `Central.incomingConnections()`.
    case connected(Connection)
    /// The set advertises again after its link ended (`resumeAfterDisconnect`).
    case resumed
    /// The set stopped for good.
    case ended(AdvertisingEndReason)

    public var description: String {
        switch self {
        case .connected(let link): return "connected: \(link.peer)"
        case .resumed: return "advertising again"
        case .ended(let reason): return "ended: \(reason)"
        }
    }
}

/// Why an advertising set stopped for good.
public enum AdvertisingEndReason: Sendable, Hashable, CustomStringConvertible {
    /// `stop()` was called.
    case stopped
    /// The set's `duration` passed (Advertising Timeout, 0x3C).
    case durationElapsed
    /// The set sent its `maximumEvents` (Limit Reached, 0x43).
    case eventLimitReached
    /// A central connected and the set does not resume after the link.
    case connected
    /// The controller was reset, lost, or refused to advertise again; the text says which.
    case adapter(String)

    public var description: String {
        switch self {
        case .stopped: return "stopped"
        case .durationElapsed: return "its duration elapsed"
        case .eventLimitReached: return "it sent its maximum number of advertising events"
        case .connected: return "a central connected"
        case .adapter(let why): return why
        }
    }
}

/// One advertising set of an adapter, on the adapter's executor. It advertises until
/// `stop()`, its duration or event limit, or a central's connection (then it advertises
/// again after that link when `resumeAfterDisconnect` is set).
///
///     let set = try await central.startAdvertising(AdvertisingData([.completeLocalName("demo")]))
///     for await event in await set.events() { print(event) }
public actor AdvertisingSet {
    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// Advertising_Handle (0 for a controller with legacy advertising only).
    public nonisolated let handle: UInt8
    public nonisolated let parameters: AdvertisingParameters
    /// True when the set was made with the extended advertising commands (7.8.53 to 7.8.56),
    /// also for legacy PDUs on a controller that has them.
    public nonisolated let usesExtendedCommands: Bool
    /// The transmit power the controller chose (extended advertising commands only), in dBm.
    public nonisolated let selectedTxPower: Int8?
    weak var central: Central?
    let eventStream: Broadcaster<AdvertisingEvent>
    /// What the central changes on the set (its address, its end), confined to the adapter
    /// queue: the central's code, its timers and its tasks change it there without this
    /// actor's isolation.
    nonisolated let status: QueueConfined<AdvertisingSetStatus>
    /// Why the set ended; nil while it is alive.
    public var endReason: AdvertisingEndReason? { status.value.endReason }
    /// The address the set advertises with now: the controller's public address, its static
    /// random address, or the current resolvable private address (a new one every rotation).
    /// When `controllerMakesAddresses`, the host's address the controller falls back to (it
    /// uses it only without the local IRK on its resolving list); a link's own address then
    /// comes from LE Enhanced Connection Complete (`Connection.localAddress`). Nil only while
    /// the controller's public address is not known.
    public var address: LEAddress? { status.value.address }
    /// True when the controller makes the set's resolvable private addresses from the local
    /// IRK on its resolving list (Own_Address_Type 0x03, Vol 4, Part E, 7.8.53; LL Privacy,
    /// Vol 6, Part B, 6.4) and rotates them itself; false when the host makes and rotates
    /// them, and for public and static addresses. `Central.loadResolvingList(_:privateAddressTimeout:localIRK:)`
    /// puts the local IRK there.
    public nonisolated let controllerMakesAddresses: Bool

    init(central: Central, handle: UInt8, parameters: AdvertisingParameters, usesExtendedCommands: Bool, selectedTxPower: Int8?, address: LEAddress?,
         controllerMakesAddresses: Bool = false) {
        self.executor = central.executor
        self.central = central
        self.handle = handle
        self.parameters = parameters
        self.usesExtendedCommands = usesExtendedCommands
        self.selectedTxPower = selectedTxPower
        self.status = QueueConfined(AdvertisingSetStatus(address: address), on: central.executor.queue)
        self.controllerMakesAddresses = controllerMakesAddresses
        self.eventStream = Broadcaster(executor: central.executor)
    }

    /// True until the set ended.
    public var isActive: Bool { endReason == nil }

    /// What happens to the set from now on; the stream finishes after `.ended`.
    public func events(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> AsyncStream<AdvertisingEvent> {
        // A set that ended already gives a stream of its end only.
        eventStream.subscribe(bufferingPolicy: bufferingPolicy, history: endReason.map { [.ended($0)] })
    }

    /// Stops advertising and frees the set at the controller. Stopping a set that already
    /// ended does nothing.
    ///
    ///     try await set.stop()
    public func stop() async throws(AdvertisingError) {
        guard endReason == nil, let central else { return }
        try await central.stopAdvertising(handle)
    }

    /// Tells the set's subscribers `event`; `.ended` is the last one. Called on the adapter queue.
    nonisolated func emit(_ event: AdvertisingEvent) {
        guard status.value.endReason == nil else { return }
        eventStream.yield(event)
        if case .ended(let reason) = event {
            status.value.endReason = reason
            eventStream.finish()
        }
    }
}

/// The state of an `AdvertisingSet` that the central changes (`AdvertisingSet.status`).
struct AdvertisingSetStatus {
    /// The address the set advertises with now (`AdvertisingSet.address`).
    var address: LEAddress?
    /// Why the set ended; nil while it is alive.
    var endReason: AdvertisingEndReason?
}
