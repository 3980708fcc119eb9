import BLECore

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

    func run() async {
        let options = ScanOptions(mode: scan.passive ? .passive : .active, allowDuplicates: true, duplicateInterval: scan.publishInterval,
                                  lostTimeout: scan.lostAfter, bufferingPolicy: .bufferingNewest(4096))
        var last: [LEAddress: (content: Content, time: ContinuousClock.Instant)] = [:]
        var announced: [LEAddress: [String]] = [:]
        do {
            for try await event in await central.scan(options: options) {
                counters.reports.add(1, ordering: .relaxed)
                switch event {
                case .discovered(let p), .updated(let p):
                    // What the message says apart from the RSSI; compared without writing it.
                    let content = Content(data: p.advertisingData, connectable: p.isConnectable, txPower: p.txPower)
                    let now = p.lastSeen
                    if let previous = last[p.address], previous.content == content, now - previous.time < scan.publishInterval { continue }
                    last[p.address] = (content, now)
                    if discovery {
                        let keys = HomeAssistantDiscovery.keys(p)
                        if announced[p.address] != keys {
                            announced[p.address] = keys
                            for m in HomeAssistantDiscovery.configs(for: p, topics: topics) { await publisher.enqueue(m) }
                        }
                    }
                    if layout != .openmqttgateway {
                        await publisher.enqueue(MQTTMessage(topic: topics.device(p.address.address), payload: AdvertisementPayload.present(p).bytes))
                    }
                    if layout != .native {
                        await publisher.enqueue(MQTTMessage(topic: topics.openMQTTGateway(p.address.address), payload: AdvertisementPayload.openMQTTGateway(p).bytes))
                    }
                case .lost(let p):
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
    /// Everything a device's message is made of besides its address and RSSI
    /// (`AdvertisementPayload.presentPairs`): equal contents give equal messages.
    struct Content: Equatable {
        var data: AdvertisingData
        var connectable: Bool
        var txPower: Int8?
    }
}
