import BLECore
import GATTClient
import SMP
import Synchronization
import BLEWire

/// The BLE→MQTT gateway on one `Central`: advertisements to `ble/GWID/devices/<ADDRESS>`,
/// the retained status and metrics, links from the config with their notifications and
/// reads, and commands on `ble/GWID/commands`. Uses the stack's public API only.
///
///     let gateway = try Gateway(central: central, config: config)
///     try await gateway.run()   // until the task is cancelled: then links close and `offline` goes out
public actor Gateway {
    public nonisolated let central: Central
    public nonisolated let publisher: Publisher
    public nonisolated let topics: GatewayTopics
    public private(set) var config: GatewayConfig
    /// Where the bonds of devices with a `security` level come from (and new ones go).
    public nonisolated let bonds: (any BondStore)?
    nonisolated let counters = Counters()
    /// The fleet's shared view, when the config names a fleet.
    nonisolated let fleet: FleetState?
    /// How the adapter is opened again when it goes away (see Gateway+Adapter.swift).
    public nonisolated let adapterReopen: AdapterReopenPolicy
    /// Where the gateway keeps what outlives a run: the GATT cache in `gatt-cache/` (nil: the
    /// cache is in memory only).
    public nonisolated let stateDirectory: String?
    /// The databases of the linked devices: a reconnect (and, on disk, a restart) whose
    /// Database Hash is unchanged skips discovery.
    public nonisolated let gattCache: GATTCache
    /// Keeps the configured links' subscriptions (handles, Database Hash, whether the CCCD was
    /// written encrypted) in `restoration/links` under the state directory: a restarted
    /// gateway brings them back on each link before its first request (Gateway+Devices.swift).
    /// Nil without a state directory.
    public nonisolated let restoration: Restoration?
    /// The configured links' background connections (BackgroundLinks.swift).
    nonisolated let background: BackgroundLinks
    var adapter = AdapterStatus()
    /// The restoration store could not be written (Gateway+Restoration.swift): links are held
    /// without it for the rest of the run.
    var restorationUnusable = false

    var scanTask: Task<Void, Never>?
    var deviceTasks: [LEAddress: Task<Void, Never>] = [:]
    var links: [LEAddress: Link] = [:]
    /// In a fleet: the configured devices this gateway holds the claim of (Gateway+Fleet.swift).
    var fleetHeld: Set<BluetoothAddress> = []
    var commandSubscriptions: [String: Task<Void, Never>] = [:]

    /// A held link and its GATT client.
    struct Link {
        var connection: Connection
        var peripheral: Peripheral
        /// The link as `restoration` set it up, with the subscriptions it brought back.
        var restored: RestoredLink?
    }

    /// Counts the data path updates without a lock.
    final class Counters: Sendable {
        let reports = Atomic<Int>(0)
        let linksUp = Atomic<Int>(0)
    }

    /// Incoming messages a fleet gateway keeps while it catches up: every gateway of a fleet
    /// receives every other's device messages, presence reports and claims, in bursts when
    /// gateways start together.
    static let fleetIncomingCapacity = 16_384

    /// Checks `config` and makes the MQTT client (will `offline` on the status topic).
    /// `bonds` serves the devices whose config asks for a security level (`FileBondStore`
    /// on the `--bond-dir` directory in `ble gateway`); `stateDirectory` keeps the GATT cache
    /// (`--state-dir` in `ble gateway`).
    public init(central: Central, config: GatewayConfig, bonds: (any BondStore)? = nil,
                adapterReopen: AdapterReopenPolicy = AdapterReopenPolicy(), stateDirectory: String? = nil) throws(GatewayError) {
        do { try config.validate() } catch { throw .config(error) }
        self.adapterReopen = adapterReopen
        self.stateDirectory = stateDirectory
        let logger = central.options.logger
        gattCache = stateDirectory.map { directory in
            GATTCache(central: central, directory: directory + "/gatt-cache") { logger.log(.warning, "\($0)") }
        } ?? GATTCache(central: central)
        background = BackgroundLinks(central: central)
        let cache = gattCache
        restoration = stateDirectory.map { directory in
            Self.restoration(central: central, directory: directory + "/restoration", cache: cache, bonds: bonds)
        }
        self.central = central
        self.bonds = bonds
        self.config = config
        topics = config.topics
        let client: MQTTClient
        do {
            client = try MQTTClient(options: config.mqttOptions())
        } catch let e as ConfigError {
            throw .config(e)
        } catch let e as MQTTError {
            throw .mqtt(e)
        } catch {
            throw .mqtt(MQTTError(operation: "mosquitto_new", code: -1, detail: "\(error)"))
        }
        let fleetTopics = config.fleetTopics
        // A fleet gateway also announces its free connection slots and follows the fleet topics.
        let slots = fleetTopics.map { [MQTTMessage(topic: $0.slots, text: String(config.fleet?.slots ?? 0), qos: .atLeastOnce, retain: true)] } ?? []
        publisher = Publisher(client: client, capacity: config.broker.queueCapacity,
                              onConnect: [MQTTMessage(topic: config.topics.status, text: "online", qos: .atLeastOnce, retain: true)] + slots,
                              subscriptions: [config.topics.commands] + (fleetTopics?.subscriptions ?? []), executor: central.executor,
                              logger: central.options.logger, incomingCapacity: fleetTopics == nil ? 1024 : Self.fleetIncomingCapacity)
        if let fleetTopics, let f = config.fleet {
            fleet = FleetState(topics: fleetTopics, fleet: f, interval: config.scan.publishInterval, discovery: config.homeAssistantDiscovery,
                               wanted: Set(config.devices.map(\.address.address)), publisher: publisher, executor: central.executor)
        } else {
            fleet = nil
        }
    }

    /// Runs until the calling task is cancelled, then stops: links disconnected, `offline`
    /// published (retained) and the broker left, within a few seconds. With `bonds`, the
    /// central's LE Long Term Key Requests are answered from them (`longTermKeyProvider`).
    public func run() async throws(GatewayError) {
        do { try publisher.client.start() } catch { throw .mqtt(error) }
        // A bonded peer that starts encryption itself gets its key from the same store.
        if let bonds { await central.setLongTermKeyProvider(bonds.longTermKeyProvider) }
        // On the adapter queue, where the publisher runs: the client's events (deliveries,
        // incoming messages) reach it without a hop through the global pool.
        let publisher = self.publisher
        let events = Task(executorPreference: AdapterTaskExecutor(central.executor)) { await publisher.run() }
        applyScan(config.scan.enabled)
        forgetUnconfiguredLinks()
        for device in config.devices where holds(device) { startDevice(device) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.commandLoop() }
            group.addTask { await self.metricsLoop() }
            group.addTask { await self.adapterLoop() }
            if let fleet = self.fleet {
                group.addTask { await fleet.run() }
                group.addTask { await self.followClaims(fleet) }
            }
            await group.waitForAll()
        }
        // Cancelled: the shutdown runs in its own task so that its waits are not cut short.
        await Task { await self.shutdown() }.value
        events.cancel()
    }

    /// Applies a new config (SIGHUP): scanning, intervals and the configured links follow it.
    /// The broker, gateway id and topic prefix stay as they were started.
    public func reload(_ new: GatewayConfig) throws(ConfigError) {
        try new.validate()
        let old = config
        config = new
        config.broker = old.broker
        config.id = old.id
        config.topicPrefix = old.topicPrefix
        config.fleet = old.fleet
        if old.scan != new.scan || old.layout != new.layout || old.homeAssistantDiscovery != new.homeAssistantDiscovery || old.keys != new.keys {
            applyScan(false)
            applyScan(new.scan.enabled)
        }
        let wanted = Dictionary(new.devices.map { ($0.address, $0) }, uniquingKeysWith: { a, _ in a })
        let before = Dictionary(old.devices.map { ($0.address, $0) }, uniquingKeysWith: { a, _ in a })
        for (address, task) in deviceTasks where wanted[address] != before[address] {
            task.cancel()
            deviceTasks[address] = nil
        }
        forgetUnconfiguredLinks()
        for device in new.devices where deviceTasks[device.address] == nil && holds(device) { startDevice(device) }
        if let fleet {
            let wanted = Set(new.devices.map(\.address.address))
            Task { await fleet.want(wanted) }
        }
    }

    func shutdown() async {
        // A fleet gateway hands its devices over before its links end.
        await fleet?.handOver()
        // No link is made again from here: a device whose link ends below advertises again at
        // once, and the background connections would take it back from its next holder.
        let unused = await background.stop()
        scanTask?.cancel()
        scanTask = nil
        for task in deviceTasks.values { task.cancel() }
        for task in commandSubscriptions.values { task.cancel() }
        deviceTasks = [:]
        commandSubscriptions = [:]
        // All links at once, so that many links still stop within a few seconds.
        let open = links.values.map(\.connection) + unused
        links = [:]
        await withTaskGroup(of: Void.self) { group in
            for connection in open { group.addTask { try? await connection.disconnect(timeout: .seconds(2)) } }
        }
        // What the links discovered is on disk before the process ends.
        try? await gattCache.flush(timeout: .seconds(2))
        await publisher.enqueue(MQTTMessage(topic: topics.status, text: "offline", qos: .atLeastOnce, retain: true))
        await publisher.drain(timeout: .seconds(2))
        publisher.client.stop()
    }

    /// Starts or stops the advertisement loop.
    func applyScan(_ enabled: Bool) {
        if !enabled {
            scanTask?.cancel()
            scanTask = nil
            return
        }
        guard scanTask == nil else { return }
        let scan = config.scan
        let layout = config.layout
        let discovery = config.homeAssistantDiscovery
        let keys = config.keys
        let central = self.central, publisher = self.publisher, topics = self.topics, counters = self.counters, fleet = self.fleet
        scanTask = Task(executorPreference: AdapterTaskExecutor(central.executor)) {
            await AdvertisementLoop(central: central, publisher: publisher, topics: topics, counters: counters,
                                    scan: scan, layout: layout, discovery: discovery, keys: keys, fleet: fleet).run()
        }
    }

    func metricsLoop() async {
        let clock = ContinuousClock()
        var lastReports = counters.reports.load(ordering: .relaxed)
        var lastDelivered = await publisher.delivered
        var lastTime = clock.now
        while !Task.isCancelled {
            do { try await Task.sleep(for: config.metricsInterval) } catch { return }
            let now = clock.now
            let reports = counters.reports.load(ordering: .relaxed)
            let delivered = await publisher.delivered
            let elapsed = max(1e-9, Double((now - lastTime).components.seconds) + Double((now - lastTime).components.attoseconds) / 1e18)
            let (reconnects, connectFailures) = (await publisher.reconnects, await publisher.connectFailures)
            let (dropped, depth) = (await publisher.dropped, await publisher.depth)
            // The links and the adapter state are read together, with no suspension between.
            let payload = JSONValue.object([
                ("reportsPerSecond", .double(((Double(reports - lastReports) / elapsed) * 10).rounded() / 10)),
                ("publishesPerSecond", .double(((Double(delivered - lastDelivered) / elapsed) * 10).rounded() / 10)),
                ("links", .int(counters.linksUp.load(ordering: .relaxed))),
                ("reconnects", .int(reconnects)),
                ("connectFailures", .int(connectFailures)),
                ("dropped", .int(dropped)),
                ("queueDepth", .int(depth)),
                ("adapter", .string(adapter.state)),
                ("adapterReopens", .int(adapter.reopens)),
            ])
            (lastReports, lastDelivered, lastTime) = (reports, delivered, now)
            await publisher.enqueue(MQTTMessage(topic: topics.metrics, payload: payload.bytes, qos: .atMostOnce, retain: true))
        }
    }

    /// A value read or notified from a characteristic: `{"value":"HEX"}`.
    static func valuePayload(_ value: [UInt8]) -> [UInt8] {
        JSONValue.object([("value", .string(value.hexUpper))]).bytes
    }
}
