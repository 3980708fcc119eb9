import BLECore
import BLESensors
import BLEWire

/// One scan subscription: each device's message on change at once, unchanged at most every
/// `publishInterval`, `lost` when it goes away. Its state is its own (no lock).
///
/// Its time is the report's (`DiscoveredPeripheral.lastSeen`, on the central's
/// `TimerScheduler`), so a central on a manual clock drives the publish interval in tests.
///
/// The gateway runs it in a task whose executor preference is the adapter queue
/// (`AdapterTaskExecutor`), where the publisher runs too: a report reaches the loop and its
/// message the publisher without waking another thread (at 10,000 reports a second each
/// report would otherwise wake a thread of the global pool).
struct AdvertisementLoop {
    let central: Central
    let publisher: Publisher
    let topics: GatewayTopics
    let counters: Gateway.Counters
    let scan: GatewayConfig.Scan
    let layout: GatewayConfig.Layout
    let discovery: Bool
    /// The bindkeys of encrypted sensors (BTHome, MiBeacon).
    let keys: SensorKeys
    /// In a fleet: device messages go to the fleet's device topic, duplicates dropped fleet-wide.
    var fleet: FleetState? = nil

    func run() async {
        // In a fleet every report counts: presence smooths the RSSI of each one.
        let options = ScanOptions(mode: scan.passive ? .passive : .active, allowDuplicates: true, duplicateInterval: fleet == nil ? scan.publishInterval : nil,
                                  lostTimeout: scan.lostAfter, bufferingPolicy: .bufferingNewest(4096))
        var last: [LEAddress: (content: Content, time: ContinuousClock.Instant)] = [:]
        var announced: [LEAddress: Set<String>] = [:]
        // In a fleet: the generation of the member set each device's configs named.
        var shown: [LEAddress: Int] = [:]
        var decoder = SensorDecoder(keys: keys, acceptsCounterRestart: scan.acceptCounterRestart)
        do {
            for try await event in await central.scan(options: options) {
                counters.reports.add(1, ordering: .relaxed)
                switch event {
                case .discovered(let p), .updated(let p):
                    if let fleet {
                        await publishToFleet(p, fleet, decoder: &decoder, announced: &announced, shown: &shown)
                        continue
                    }
                    // What the message says apart from the RSSI; compared without writing it.
                    let content = Content(data: p.advertisingData, connectable: p.isConnectable, txPower: p.txPower)
                    let now = p.lastSeen
                    let previous = last[p.address]
                    let due = previous.map { now - $0.time >= scan.publishInterval } ?? true
                    if let previous, previous.content == content, !due { continue }
                    var decoding = decoder.decode(SensorAdvertisement(address: p.address, data: p.advertisingData))
                    // A packet already published goes out again only as the periodic message,
                    // and without its events (a button press is reported once).
                    if decoding.isRepeat {
                        guard due else { continue }
                        decoding.removeEvents()
                    }
                    last[p.address] = (content, now)
                    await announce(p, decoding, &announced)
                    if layout != .openmqttgateway {
                        await publisher.enqueue(MQTTMessage(topic: topics.device(p.address.address), payload: AdvertisementPayload.present(p, decoding: decoding).bytes))
                    }
                    if layout != .native {
                        await publisher.enqueue(MQTTMessage(topic: topics.openMQTTGateway(p.address.address),
                                                            payload: AdvertisementPayload.openMQTTGateway(p, decoding: decoding).bytes))
                    }
                case .lost(let p):
                    // In a fleet, one gateway losing a device says nothing: presence tells `away`.
                    if fleet != nil { continue }
                    last[p.address] = nil
                    await publisher.enqueue(MQTTMessage(topic: topics.device(p.address.address), payload: AdvertisementPayload.lost(p.address).bytes, qos: .atLeastOnce))
                }
            }
        } catch {
            // The scan ended (adapter gone, cancelled): the gateway's metrics show no reports.
        }
    }
}

extension AdvertisementLoop {
    /// The Home Assistant configs of the values of `decoding` not announced yet; `availability`:
    /// the status topics that keep them available (nil: this gateway's own).
    func announce(_ p: DiscoveredPeripheral, _ decoding: SensorDecoding, _ announced: inout [LEAddress: Set<String>],
                  availability: [String]? = nil) async {
        guard discovery else { return }
        let keys = HomeAssistantDiscovery.keys(decoding)
        let known = announced[p.address, default: []]
        let fresh = keys.filter { !known.contains($0) }
        guard !fresh.isEmpty else { return }
        announced[p.address] = known.union(fresh)
        let device = HomeAssistantDiscovery.Device(address: p.address.address, name: p.advertisingData.localName, decoding: decoding,
                                                   publishInterval: scan.publishInterval)
        for m in HomeAssistantDiscovery.configs(for: device, keys: fresh, topics: topics, availability: availability ?? [topics.status]) {
            await publisher.enqueue(m)
        }
    }

    /// Everything a device's message is made of besides its address and RSSI
    /// (`AdvertisementPayload.presentPairs`): equal contents give equal messages.
    struct Content: Equatable {
        var data: AdvertisingData
        var connectable: Bool
        var txPower: Int8?
    }
}
