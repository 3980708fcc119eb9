import Testing
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLESeed

/// Scans asked for while the adapter is not ready wait for it (bounded by
/// `ScanOptions.readyTimeout`); terminal states end them with a typed error; a power-off does
/// what `ScanOptions.whenPoweredOff` says.
@Suite(.timeLimit(.minutes(1))) struct ScanReadinessTests {
    static let device = "C0:11:22:33:44:55"

    /// A central over a scripted controller whose power state a test reports, as a system
    /// (or `FakeCentral`) does through `CentralBackend`.
    final class Backend: CentralBackend, @unchecked Sendable { // `transport` is only handed over once; the continuation is Sendable
        let transport: MemoryTransport
        let states: AsyncStream<AdapterState>
        let report: AsyncStream<AdapterState>.Continuation
        init(transport: MemoryTransport) {
            self.transport = transport
            (states, report) = AsyncStream.makeStream(of: AdapterState.self)
        }
        func makeTransport() -> any HCITransport { transport }
        func powerStates() -> AsyncStream<AdapterState> { states }
    }

    struct BackendBed {
        let central: Central
        let controller: ScriptedController
        let backend: Backend
        let clock: LateManualScheduler

        static func make() throws -> BackendBed {
            let (host, controllerEnd) = MemoryTransport.pair(name: "backend")
            let controller = try ScriptedController(transport: controllerEnd, extendedScanning: false)
            let queue = AdapterExecutor(label: "scan-readiness")
            let clock = LateManualScheduler()
            clock.bind(queue: queue.queue)
            var options = Central.Options()
            options.scheduler = clock
            let backend = Backend(transport: host)
            return BackendBed(central: Central(backend: backend, queue: queue, options: options), controller: controller, backend: backend, clock: clock)
        }

        func report(_ state: AdapterState) async throws {
            backend.report.yield(state)
            try await waitForState(state, of: central)
        }
    }

    @Test("A scan asked for before power-on starts when the controller is up, and delivers")
    func scanBeforePowerOn() async throws {
        let bed = try await ScanBed.make(poweredOn: false)
        #expect(await bed.central.state == .unknown)
        let sub = Collected(await bed.central.scan())
        await bed.central.withScanner { await $0.settled() }
        #expect(await bed.central.snapshot.isScanning == false)
        try await bed.central.powerOn()
        let commands = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        #expect(Array(commands.suffix(2)) == [Spec.setScanParameters(active: true, interval: 0x0060, window: 0x0030), Spec.setScanEnable(true)])
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.device, data: Spec.flags, rssi: -50)]))
        let events = await sub.log.wait { items, _ in !items.isEmpty }
        #expect(events.discoveredAddresses == [Self.device])
        // Nothing is left to end it: the ready timeout was disarmed by the power-on.
        await bed.clock.advance(by: .seconds(11))
        #expect(await sub.log.ended == false)
        sub.cancel()
        await bed.central.close()
    }

    @Test("A scan that waits longer than readyTimeout ends with ScanError.notReadyInTime")
    func readyTimeout() async throws {
        let bed = try await ScanBed.make(poweredOn: false)
        let sub = Collected(await bed.central.scan(options: ScanOptions(readyTimeout: .seconds(3))))
        await bed.clock.advance(by: .milliseconds(2999))
        #expect(await sub.log.ended == false)
        await bed.clock.advance(by: .milliseconds(1))
        let end = await sub.end()
        #expect(end.error as? ScanError == .notReadyInTime(.unknown, waited: .seconds(3)))
        #expect("\(end.error.map { "\($0)" } ?? "")" == "scan ended: the adapter stayed unknown for 3000 ms without being powered on; check central.snapshot.reason, or raise ScanOptions.readyTimeout")
        // No command was sent for it: the controller was never set up.
        #expect(await bed.controller.recorded().isEmpty)
    }

    @Test("discoveredPeripherals before power-on waits too, and its scan starts on power-on")
    func snapshotsBeforePowerOn() async throws {
        let bed = try await ScanBed.make(poweredOn: false)
        let lists = Collected(await bed.central.discoveredPeripherals())
        #expect(await lists.first(1) == [[]])
        try await bed.central.powerOn()
        let commands = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        #expect(commands.last == Spec.setScanEnable(true))
        #expect(await lists.log.ended == false)
        lists.cancel()
        await bed.central.close()
    }

    @Test("A Hardware Error leaves the scan waiting; powerOn() runs it again for the same subscriber")
    func hardwareErrorThenPowerOn() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        // HCI_Hardware_Error (Vol 4, Part E, 7.7.16): event code 0x10, Hardware_Code 0x00.
        bed.controller.sendEvent(code: 0x10, [0x00])
        try await waitForState(.resetting, of: bed.central)
        await bed.clock.advance(by: .seconds(9))
        #expect(await sub.log.ended == false)
        let before = await bed.controller.recorded().count
        try await bed.central.powerOn()
        let after = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) && $0.count > 0 }
        #expect(after.last == Spec.setScanEnable(true))
        #expect(await bed.controller.recorded().count > before)
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.device, data: Spec.flags, rssi: -50)]))
        #expect(await sub.log.wait { items, _ in !items.isEmpty }.discoveredAddresses == [Self.device])
        sub.cancel()
        await bed.central.close()
    }

    @Test("A scan asked for after a Hardware Error, before powerOn(), ends after readyTimeout; the running one stays")
    func hardwareErrorTimesOut() async throws {
        let bed = try await ScanBed.make()
        let running = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        bed.controller.sendEvent(code: 0x10, [0x00])
        try await waitForState(.resetting, of: bed.central)
        let late = Collected(await bed.central.scan())
        await bed.clock.advance(by: .seconds(10))
        #expect(await late.end().error as? ScanError == .notReadyInTime(.resetting, waited: .seconds(10)))
        await bed.clock.advance(by: .seconds(60))
        #expect(await running.log.ended == false)
        running.cancel()
        await bed.central.close()
    }

    @Test("Power-off ends a scan by default, keeps one with whenPoweredOff: .wait until power-on")
    func powerOffBehaviours() async throws {
        let bed = try BackendBed.make()
        try await bed.report(.poweredOn)
        let ending = Collected(await bed.central.scan())
        let waiting = Collected(await bed.central.scan(options: ScanOptions(whenPoweredOff: .wait)))
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        try await bed.report(.poweredOff)
        #expect(await ending.end().error as? ScanError == .adapterNotReady(.poweredOff))
        #expect(await bed.controller.scanCommands { $0.last == Spec.setScanEnable(false) }.last == Spec.setScanEnable(false))
        // No time limit while powered off and asked to wait.
        await bed.clock.advance(by: .seconds(60))
        #expect(await waiting.log.ended == false)
        // A new scan asked for while powered off: the default ends at once, .wait waits.
        let late = await Collected(await bed.central.scan()).end()
        #expect(late.error as? ScanError == .adapterNotReady(.poweredOff))
        try await bed.report(.poweredOn)
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.device, data: Spec.flags, rssi: -50)]))
        #expect(await waiting.log.wait { items, _ in !items.isEmpty }.discoveredAddresses == [Self.device])
        waiting.cancel()
        await bed.central.close()
    }

    @Test("Terminal states end waiting scans with adapterNotReady; .unknown keeps them waiting")
    func terminalStates() async throws {
        let bed = try BackendBed.make()
        let waiting = Collected(await bed.central.scan())
        try await bed.report(.poweredOn)
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        try await bed.report(.unknown)
        await bed.central.withScanner { await $0.settled() }
        #expect(await bed.central.snapshot.isScanning == false)
        #expect(await waiting.log.ended == false)
        try await bed.report(.unauthorized)
        #expect(await waiting.end().error as? ScanError == .adapterNotReady(.unauthorized))
        let refused = await Collected(await bed.central.scan(options: ScanOptions(whenPoweredOff: .wait))).end()
        #expect(refused.error as? ScanError == .adapterNotReady(.unauthorized))
        await bed.central.close()
    }

    @Test("close() ends a scan that waits through power-off, and later scans end at once")
    func closeEndsWaiting() async throws {
        let bed = try BackendBed.make()
        try await bed.report(.poweredOn)
        try await bed.report(.poweredOff)
        let waiting = Collected(await bed.central.scan(options: ScanOptions(whenPoweredOff: .wait)))
        await bed.central.close()
        let end = await waiting.end()
        #expect(end.ended)
        #expect(end.error == nil)
        let after = await Collected(await bed.central.scan(options: ScanOptions(whenPoweredOff: .wait))).end()
        #expect(after.error as? ScanError == .adapterNotReady(.poweredOff))
    }
}

/// Returns once `central` reports `state` (bounded by real time).
private func waitForState(_ state: AdapterState, of central: Central) async throws {
    struct Ended: Error {}
    try await bounded {
        for await s in await central.stateEvents() where s == state { return }
        throw Ended()
    }
}
