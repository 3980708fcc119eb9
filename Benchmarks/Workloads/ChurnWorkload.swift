import BLECore
import Dispatch
import GATTClient

/// W4: connect / discover / disconnect cycles on the in-process virtual controller; resident
/// memory and open descriptors at the end against the start.
enum ChurnWorkload {
    static func run(cycles: Int) async throws -> Measurement {
        let stack = BenchStack(peripherals: 1)
        try await stack.central.powerOn()
        let peer = BenchStack.address(0)
        func cycle() async throws {
            let link = try await stack.central.connect(peer, timeout: .seconds(5))
            let peripheral = try await Peripheral(connection: link)
            for s in try await peripheral.services() {
                for c in try await peripheral.characteristics(of: s) { _ = try await peripheral.descriptors(of: c) }
            }
            try await link.disconnect()
        }
        // Warm-up: caches, pools and the first-use allocations of the runtime.
        for _ in 0..<200 { try await cycle() }
        let rssStart = residentBytes(), fdStart = openFDCount()
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<cycles { try await cycle() }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let rssEnd = residentBytes(), fdEnd = openFDCount()
        await stack.close()
        var m = Measurement(name: "W4 churn: connect + discover all + disconnect (cycles)", operations: cycles, seconds: seconds,
                            operationsPerSecond: Double(cycles) / seconds)
        m.extra = [
            "microsecondsPerCycle": seconds * 1e6 / Double(cycles),
            "residentBytesStart": Double(rssStart), "residentBytesEnd": Double(rssEnd),
            "openFDsStart": Double(fdStart), "openFDsEnd": Double(fdEnd),
        ]
        return m
    }
}
