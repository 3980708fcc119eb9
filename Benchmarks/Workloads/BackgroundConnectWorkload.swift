import BLECore
import BLETestSupport
import Dispatch
import BLEWire

/// Background connections: `devices` known devices on the Filter Accept List appear in a
/// random order, one to three at a time, on the in-process virtual controller (links made at
/// once, advertising at 100 ms); the time from a device appearing to its `Connection` reaching
/// the consumer of `connect(whenSeen:)` is the host's share of the delay (list reloads, the
/// renewed create connection, link set-up), p50 and p99 over `rounds` rounds.
enum BackgroundConnectWorkload {
    static func run(devices: Int, rounds: Int) async throws -> Measurement {
        struct StreamEnded: Error {}
        var latencies: [Double] = []
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<rounds {
            var options = VirtualController.Options()
            options.filterAcceptListSize = UInt8(min(255, devices + 8))
            let vc = VirtualController(options: options)
            let central = Central(transport: vc.makeTransport(), options: vc.centralOptions())
            try await central.powerOn()
            let known = (0..<devices).map { BenchStack.address($0) }
            var links = await central.connect(whenSeen: Set(known)).makeAsyncIterator()
            var order = known.shuffled()
            var appeared: [LEAddress: UInt64] = [:]
            while !order.isEmpty {
                let burst = min(order.count, Int.random(in: 1...3))
                for _ in 0..<burst {
                    let device = order.removeLast()
                    appeared[device] = DispatchTime.now().uptimeNanoseconds
                    vc.addPeripheral(SimulatedPeripheral(address: device, advertisingData: [0x02, 0x01, 0x06], advertisingInterval: .milliseconds(100)))
                }
                for _ in 0..<burst {
                    guard let link = try await links.next(), let t0 = appeared[link.peer] else { throw StreamEnded() }
                    latencies.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
                }
            }
            await central.close()
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        latencies.sort()
        func percentile(_ p: Double) -> Double { latencies.isEmpty ? .infinity : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        var m = Measurement(name: "background connections: \(devices) known devices appearing at random, appear -> connected",
                            operations: latencies.count, seconds: seconds, operationsPerSecond: Double(latencies.count) / seconds)
        m.extra = ["p50Milliseconds": percentile(0.5), "p99Milliseconds": percentile(0.99), "devices": Double(devices), "rounds": Double(rounds)]
        return m
    }
}
