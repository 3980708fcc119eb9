import ATT
import BLECore
import BLETestSupport
import Dispatch
import Foundation
import GATTClient

/// Connect to first read, with and without the GATT cache on disk, side by side: each cycle
/// connects to a heart-rate monitor on the in-process virtual controller (immediate time, so
/// only the host's share is timed), reads Battery Level (0x2A19) and disconnects, once
/// without a cache (full discovery) and once with a new `GATTCache` on a directory the first
/// cycle wrote (what a restarted app has: the file is read, the Database Hash compared,
/// discovery skipped). Also the ATT requests each path sends: over the air each is at least
/// one connection event, so `estimatedAirMilliseconds` puts them at a 30 ms interval.
enum GATTCacheWorkload {
    static func run(cycles: Int, directory: URL) async throws -> Measurement {
        let stack = BenchStack(peripherals: 1)
        try await stack.central.powerOn()
        let battery = CharacteristicIdentifier(uuid: "2A19", service: ServiceIdentifier(uuid: "180F"))
        let cacheDirectory = directory.appendingPathComponent("gatt-cache").path
        try? FileManager.default.removeItem(atPath: cacheDirectory)
        let server = stack.servers[0]

        /// One connect -> first read -> disconnect: milliseconds to the read and ATT requests sent.
        func cycle(cache: GATTCache?) async throws -> (Double, Int) {
            let before = await server.receivedOpcodes().count
            let start = DispatchTime.now().uptimeNanoseconds
            let link = try await stack.central.connect(BenchStack.address(0), timeout: .seconds(5))
            let peripheral = try await Peripheral(connection: link, cache: cache)
            guard try await peripheral.read(battery) == [0x64] else { throw BenchError("Battery Level read back wrong") }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            let requests = await server.receivedOpcodes().dropFirst(before).filter { $0 != .handleValueConfirmation }.count
            try await cache?.flush()
            try await link.disconnect(timeout: .seconds(5))
            return (elapsed, requests)
        }

        // The first cached cycle writes the file; it is not measured.
        _ = try await cycle(cache: GATTCache(central: stack.central, directory: cacheDirectory))
        var without: [Double] = [], with: [Double] = []
        var requestsWithout = 0, requestsWith = 0
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<cycles {
            let (a, r1) = try await cycle(cache: nil)
            without.append(a); requestsWithout = r1
            let (b, r2) = try await cycle(cache: GATTCache(central: stack.central, directory: cacheDirectory))
            with.append(b); requestsWith = r2
            await server.clearRecords()
            stack.vc.clearRecords()
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        await stack.close()
        try? FileManager.default.removeItem(atPath: cacheDirectory)
        func p50(_ v: [Double]) -> Double { v.isEmpty ? .infinity : v.sorted()[v.count / 2] }
        var m = Measurement(name: "GATT cache: connect -> first read of Battery Level, without and with the cache on disk (new GATTCache each cycle)",
                            operations: 2 * cycles, seconds: seconds, operationsPerSecond: Double(2 * cycles) / seconds)
        m.extra = [
            "withoutCacheP50Milliseconds": p50(without), "withCacheP50Milliseconds": p50(with),
            "attRequestsWithoutCache": Double(requestsWithout), "attRequestsWithCache": Double(requestsWith),
            "estimatedAirMillisecondsWithoutCache": Double(requestsWithout) * 30, "estimatedAirMillisecondsWithCache": Double(requestsWith) * 30,
            "cycles": Double(cycles),
        ]
        return m
    }
}
