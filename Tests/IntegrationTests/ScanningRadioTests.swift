import Dispatch
import Testing
import BLECore
import BLETestSupport
import BLEWire

/// Central scanning against the Bumble virtual radio (Fixtures/peers): an independent
/// controller and independent advertisers. Names and addresses come from
/// Fixtures/peers/scenarios/all.json and the radio's ready line.
///
/// The "Polar H10 sim" name does not fit in its 31-byte advertisement, so the scenario puts
/// it in the scan response; Bumble's link delivers the advertising data again in the scan
/// response report, so that name never reaches the host over this radio. Name filters use
/// the devices whose name is in the advertisement ("Lab sim", "Battery sim").
@Suite("Scanning on the virtual radio", .timeLimit(.minutes(2)))
struct ScanningRadioTests {
    /// Opens a scan with `open` inside a task and returns the first discovered or updated
    /// peripheral for which `match` holds within `seconds` (nil otherwise). The stream lives
    /// only in that task, so leaving it ends the subscription.
    static func first(within seconds: Int, _ open: @escaping @Sendable () async -> ScanStream,
                      where match: @escaping @Sendable (DiscoveredPeripheral) -> Bool = { _ in true }) async throws -> DiscoveredPeripheral? {
        try await withThrowingTaskGroup(of: DiscoveredPeripheral?.self) { group in
            group.addTask {
                for try await event in await open() {
                    switch event {
                    case .discovered(let p), .updated(let p): if match(p) { return p }
                    case .lost: break
                    }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Waits (up to 5 s) until the central reports no scan running.
    static func waitForIdle(_ central: Central) async throws {
        for _ in 0..<100 where await central.snapshot.isScanning {
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test("Scanning for service 180D finds the \"Polar H10 sim\" device at F0:5E:B1:00:00:01 (random static) within 10 s")
    func findsHeartRateMonitor() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let hrm = try #require(radio.device("hrm"))
            #expect(hrm.name == "Polar H10 sim")
            let central = try await Central.open(radio.transportSpec)
            let found = try await Self.first(within: 10) { await central.scan(filter: ScanFilter(services: [BluetoothUUID(uuid16: 0x180D)])) }
            #expect(found.map { "\($0.address)" } == "F0:5E:B1:00:00:01 (random static)")
            #expect("\(hrm.address) (random static)" == found.map { "\($0.address)" })
            #expect(found?.advertisingData.serviceUUIDs.contains(BluetoothUUID(uuid16: 0x180D)) == true)
            // Scenario: Manufacturer Specific Data of company 0xFFFF, data 48 52; TX power 0 dBm.
            #expect(found?.advertisingData.manufacturerData == [ManufacturerSpecificData(companyID: 0xFFFF, data: [0x48, 0x52])])
            #expect(found?.txPower == 0)
            #expect(found?.isConnectable == true)
            try await Self.waitForIdle(central)
            #expect(await central.snapshot.isScanning == false)
            await central.close()
        }
    }

    @Test("Two subscribers share one scan, each with its own name filter; when both leave the scan stops")
    func twoSubscribersByName() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let central = try await Central.open(radio.transportSpec)
            async let lab = Self.first(within: 10) { await central.scan(filter: ScanFilter(nameContains: "lab")) }
            async let battery = Self.first(within: 10) { await central.scan(filter: ScanFilter(nameContains: "Battery sim")) }
            let (foundLab, foundBattery) = try await (lab, battery)
            #expect(foundLab?.name == "Lab sim")
            #expect(foundLab.map { "\($0.address)" } == "F0:5E:B1:00:00:02 (random static)")
            #expect(foundBattery?.name == "Battery sim")
            #expect(foundBattery.map { "\($0.address)" } == "F0:5E:B1:00:00:03 (random static)")
            try await Self.waitForIdle(central)
            #expect(await central.snapshot.isScanning == false)
            await central.close()
        }
    }

    @Test("While one subscriber scans, a second joins and leaves without stopping the first")
    func secondSubscriberLeaves() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let central = try await Central.open(radio.transportSpec)
            let (stream, continuation) = AsyncStream<DiscoveredPeripheral>.makeStream()
            let longRunning = Task {
                for try await event in await central.scan(filter: ScanFilter(services: [BluetoothUUID(uuid16: 0x180D)]), options: ScanOptions(allowDuplicates: true)) {
                    continuation.yield(event.peripheral)
                }
            }
            var reports = stream.makeAsyncIterator()
            #expect(await reports.next() != nil)
            let battery = try await Self.first(within: 10) { await central.scan(filter: ScanFilter(nameContains: "Battery")) }
            #expect(battery?.name == "Battery sim")
            // The first subscriber still receives reports heard after the second left
            // (lastSeen is an instant of the central's clock: ContinuousClock).
            let mark = ContinuousClock.now
            var later: DiscoveredPeripheral?
            while let p = await reports.next() {
                if p.lastSeen > mark { later = p; break }
            }
            #expect(later.map { "\($0.address.address)" } == "F0:5E:B1:00:00:01")
            #expect(await central.snapshot.isScanning)
            longRunning.cancel()
            try await Self.waitForIdle(central)
            #expect(await central.snapshot.isScanning == false)
            await central.close()
        }
    }

    @Test("The list stream shows every advertiser of the scenario")
    func discoveredList() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let central = try await Central.open(radio.transportSpec)
            let expected: Set<String> = ["F0:5E:B1:00:00:01", "F0:5E:B1:00:00:02", "F0:5E:B1:00:00:03"]
            let list = try await bounded(within: 10) {
                for await list in await central.discoveredPeripherals() {
                    if Set(list.map { "\($0.address.address)" }).isSuperset(of: expected) { return list }
                }
                return []
            }
            #expect(Set(list.map { "\($0.address.address)" }).isSuperset(of: expected))
            #expect(Set(list.compactMap(\.name)).isSuperset(of: ["Lab sim", "Battery sim"]))
            await central.close()
        }
    }
}
