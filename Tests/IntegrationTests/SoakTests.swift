import Testing
import Foundation
import BLETestSupport
import BLEWire
import BLECore
import GATTClient
import GATTServer

/// Connect / discover / subscribe (N notifications, in order, none lost) / disconnect, over
/// and over, on the in-process virtual controller and against the Bumble radio. At the end
/// the process holds what it held after warming up: the same open file descriptors, threads
/// within `Soak.threadBand`, resident memory within `Soak.residentBand`.
///
/// Cycle counts: BLE_SOAK_CYCLES_VC (default 2,000) and BLE_SOAK_CYCLES_RADIO (default 20);
/// scripts/soak runs 100,000 and 1,000.
@Suite(.serialized)
struct SoakTests {
    static let notificationsPerCycle = 5

    @Test(.timeLimit(.minutes(60)))
    func virtualControllerCycles() async throws {
        let cycles = Soak.cycles("BLE_SOAK_CYCLES_VC", default: 2_000)
        let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_50_A4_00_00_01), type: .random)
        let vc = VirtualController()
        let server = GATTServer(database: .lab(), queue: vc.queue)
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06], attServer: server))
        let central = try await vc.poweredOnCentral()

        let warmup = min(100, max(1, cycles / 10))
        var baseline = ProcessResources.now()
        let start = ContinuousClock.now
        var sequence: UInt32 = 0
        for cycle in 0..<cycles {
            if cycle == warmup { baseline = await ProcessResources.baseline() }
            let link = try await central.connect(peer)
            let peripheral = try await Peripheral(connection: link)
            let characteristics = try await peripheral.characteristics(of: Soak.labService)
            #expect(characteristics.count == 5)
            let stream = try await peripheral.subscribe(to: Soak.labCounter)
            var expected: [[UInt8]] = []
            for _ in 0..<Self.notificationsPerCycle {
                sequence &+= 1
                expected.append(Soak.counter(sequence))
                await server.notify(characteristic: Soak.labCounter.uuid, value: Soak.counter(sequence))
            }
            var received: [[UInt8]] = []
            for try await value in stream {
                received.append(value)
                if received.count == Self.notificationsPerCycle { break }
            }
            #expect(received == expected, "cycle \(cycle)")
            try await link.disconnect()
            if received != expected { break }
            // A millisecond of virtual time: the clock discards the cancelled timers
            // (command and ATT timeouts) as a real timer wheel would.
            await vc.advance(by: .milliseconds(1))
            // The test beds record every packet; a soak measures the stack, not those records.
            vc.clearRecords()
            await server.clearRecords()
        }
        await vc.settle()
        let end = await ProcessResources.settled(toward: baseline)
        let elapsed = ContinuousClock.now - start
        print("soak virtual-controller: \(cycles) cycles in \(elapsed); after \(warmup) warm-up cycles: \(baseline); at the end: \(end)")
        #expect(await central.snapshot.connectionCount == 0)
        #expect(vc.connections.isEmpty)
        #expect(end.openFDs <= baseline.openFDs, "descriptors at the end: \(ProcessResources.openFDTargets())")
        #expect(end.threads - baseline.threads <= Soak.threadBand, "threads grew: \(baseline.threads) -> \(end.threads)")
        #expect(end.residentBytes - baseline.residentBytes <= Soak.residentBand)
        await central.close()
    }

    @Test(.timeLimit(.minutes(60)), .enabled(if: Soak.radioAvailable))
    func radioCycles() async throws {
        let cycles = Soak.cycles("BLE_SOAK_CYCLES_RADIO", default: 20)
        let radio = try await VirtualRadio.start(scenario: "lab")
        defer { radio.stop() }
        let device = try #require(radio.device("lab"))
        let peer = try #require(LEAddress(device.address, type: .random))
        let central = try await Central.open(radio.transportSpec)

        let warmup = min(5, max(1, cycles / 10))
        var baseline = ProcessResources.now()
        let start = ContinuousClock.now
        for cycle in 0..<cycles {
            if cycle == warmup { baseline = await ProcessResources.baseline() }
            let link = try await central.connect(peer, timeout: .seconds(10))
            let peripheral = try await Peripheral(connection: link)
            let characteristics = try await peripheral.characteristics(of: Soak.labService)
            #expect(characteristics.count == 5)
            // The radio's counter starts at 1 for each subscription and steps every 100 ms.
            let stream = try await peripheral.subscribe(to: Soak.labCounter)
            var received: [[UInt8]] = []
            for try await value in stream {
                received.append(value)
                if received.count == 3 { break }
            }
            #expect(received == (1...3).map { Soak.counter($0) }, "cycle \(cycle)")
            try await link.disconnect()
        }
        let end = await ProcessResources.settled(toward: baseline)
        let elapsed = ContinuousClock.now - start
        print("soak radio: \(cycles) cycles in \(elapsed); after \(warmup) warm-up cycles: \(baseline); at the end: \(end)")
        #expect(await central.snapshot.connectionCount == 0)
        #expect(end.openFDs <= baseline.openFDs, "descriptors at the end: \(ProcessResources.openFDTargets())")
        #expect(end.threads - baseline.threads <= Soak.threadBand, "threads grew: \(baseline.threads) -> \(end.threads)")
        #expect(end.residentBytes - baseline.residentBytes <= Soak.residentBand)
        await central.close()
    }
}
