import BLECore
import BLETestSupport
import Dispatch
import Foundation
import GATTClient
import BLEWire
import BLETransport

/// W3: recorded captures through the whole stack.
enum ReplayWorkload {
    static func fixture(_ relative: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/captures").appendingPathComponent(relative).path
    }

    /// The recorded heart-rate session (connect, MTU, discovery, reads, 10 notifications, a
    /// write, disconnect) replayed in script mode: whole sessions per second.
    static func heartRateSessions(_ count: Int, runs: Int) async throws -> Measurement {
        let path = fixture("recorded/heart-rate-session.btsnoop")
        // How many host packets remain once the capture's first ACL packet (the MTU request)
        // is next: the link setup commands before it are sent first, as when recorded.
        let records = try BTSnoopReader(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path)))).records.filter { $0.direction == .sent }
        guard let firstACL = records.firstIndex(where: { if case .acl = $0.packet { return true } else { return false } }) else {
            throw BenchError("the capture has no ACL packet from the host")
        }
        let remainingAtFirstACL = records.count - firstACL
        var best = Double.infinity
        for _ in 0..<runs {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<count {
                let transport = try ReplayTransport(path: path)
                // Virtual time: the session's timers (command and ATT timeouts) never wait.
                var options = Central.Options()
                let executor = AdapterExecutor(label: "replay")
                let clock = ManualScheduler(queue: executor.queue)
                options.executor = executor
                options.scheduler = clock
                let central = Central(transport: transport, options: options)
                try await central.powerOn()
                let bpm: [UInt16]
                do { bpm = try await HeartRateSession.run(central, transport: transport, clock: clock, remainingAtFirstACL: remainingAtFirstACL) } catch {
                    let mismatches = central.executor.queue.sync { transport.mismatches }
                    throw BenchError("\(error); host packets not in the capture: \(mismatches.prefix(3))")
                }
                guard bpm == [60, 63, 66, 69, 72, 75, 78, 81, 84, 87] else { throw BenchError("replay gave \(bpm)") }
                let mismatches = central.executor.queue.sync { transport.mismatches }
                guard mismatches.isEmpty else { throw BenchError("host packets not in the capture: \(mismatches.prefix(3))") }
                await central.close()
            }
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return Measurement(name: "W3 replay: heart-rate session through Central + Peripheral (sessions)", operations: count, seconds: best,
                           operationsPerSecond: Double(count) / best)
    }

    /// A real capture free-running through Central's host: packets per second.
    static func freeRunning(_ name: String, runs: Int) async throws -> Measurement {
        let path = fixture("real/\(name)")
        var best = Double.infinity
        var packets = 0
        for _ in 0..<runs {
            let replay = try ReplayTransport(path: path, options: .freeRunning)
            packets = replay.receivedTotal
            let central = Central(transport: replay)
            let states = await central.stateEvents()
            let start = DispatchTime.now().uptimeNanoseconds
            let power = Task { try? await central.powerOn() }
            for await s in states where s == .transportLost { break }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            _ = await power.value
            let delivered = central.executor.queue.sync { replay.delivered }
            guard delivered == packets else { throw BenchError("\(name): delivered \(delivered) of \(packets)") }
            best = min(best, elapsed)
            await central.close()
        }
        return Measurement(name: "W3 replay: \(name) free-running through Central's host (packets)", operations: packets, seconds: best,
                           operationsPerSecond: Double(packets) / best)
    }
}

/// The heart-rate session of the recorded capture (the same steps as when it was recorded).
enum HeartRateSession {
    static let peer = LEAddress("F0:5E:B1:00:00:01", type: .random)!

    static func run(_ central: Central, transport: ReplayTransport, clock: ManualScheduler, remainingAtFirstACL: Int) async throws -> [UInt16] {
        // As when the capture was recorded: no 2M PHY request (Bumble's controller never
        // answers LE Set PHY).
        var parameters = ConnectionRequestParameters()
        parameters.request2MPHY = false
        let link = try await central.connect(peer, timeout: .seconds(10), parameters: parameters)
        // The link setup commands go out before the first ATT request, as in the capture.
        try await waitUntil(central, "the link setup commands were sent") { transport.expectedRemaining <= remainingAtFirstACL }
        let peripheral = try await Peripheral(connection: link)
        let services = try await peripheral.services()
        for s in services { _ = try await peripheral.characteristics(of: s) }
        let heartRate = ServiceIdentifier(uuid: "180D")
        _ = try await peripheral.read(CharacteristicIdentifier(uuid: "2A38", service: heartRate), as: BodySensorLocation.self)
        _ = try await peripheral.read(CharacteristicIdentifier(uuid: "2A29", service: ServiceIdentifier(uuid: "180A")), as: String.self)
        var bpm: [UInt16] = []
        // The iterator is kept until the control point write is done, as when the capture was
        // recorded: the CCCD is cleared after that write, not before.
        var readings: NotificationStream<HeartRateMeasurement>.Iterator? =
            try await peripheral.subscribe(to: CharacteristicIdentifier(uuid: "2A37", service: heartRate), as: HeartRateMeasurement.self).makeAsyncIterator()
        while bpm.count < 10, let reading = try await readings?.next() { bpm.append(reading.beatsPerMinute) }
        try await peripheral.write([0x01], to: CharacteristicIdentifier(uuid: "2A39", service: heartRate), type: .withResponse)
        let remaining = central.executor.queue.sync { transport.expectedRemaining }
        readings = nil
        try await waitUntil(central, "the CCCD was cleared") { transport.expectedRemaining < remaining }
        await clock.advance(by: .seconds(1))
        try await link.disconnect()
        return bpm
    }
}

/// Waits (at most 2 s) until `condition`, read on the adapter queue, holds.
func waitUntil(_ central: Central, _ what: String, _ condition: @escaping @Sendable () -> Bool) async throws {
    let deadline = DispatchTime.now().uptimeNanoseconds + 2_000_000_000
    while !central.executor.queue.sync(execute: condition) {
        guard DispatchTime.now().uptimeNanoseconds < deadline else { throw BenchError("replay: timed out waiting until \(what)") }
        await Task.yield()
    }
}
