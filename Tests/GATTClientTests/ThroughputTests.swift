import Testing
import Dispatch
import GATTClient
import BLETestSupport

/// The notification hot path: a Handle Value Notification SDU enters the channel's receive
/// handler on the adapter queue and is routed by value handle into a subscriber's stream.
/// Debug builds are several times slower than release; the floors here only catch a hot
/// path that regressed to an actor hop per notification.
@Suite struct ThroughputTests {
    @Test func notificationRouteAndDelivery() async throws {
        let bed = TestBed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter, bufferingPolicy: .bufferingNewest(1))
        // 0x1B, handle 0x001B (27, the counter's value handle), 4 value bytes.
        let sdu: [UInt8] = [0x1B, 0x1B, 0x00, 1, 2, 3, 4]
        let n = 200_000
        let channel = bed.channel
        let routeSeconds: Double = await withCheckedContinuation { c in
            bed.executor.queue.async {
                let start = DispatchTime.now().uptimeNanoseconds
                for _ in 0..<n { channel.deliverToClient(sdu) }
                c.resume(returning: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            }
        }
        let routeRate = Double(n) / routeSeconds
        _ = stream

        // Delivered: an async subscriber with an unbounded buffer receives every one.
        let counted = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        let consumer = Task { () -> Int in
            var got = 0
            for try await _ in counted { got += 1; if got == n { break } }
            return got
        }
        let start = DispatchTime.now().uptimeNanoseconds
        bed.executor.queue.async { for _ in 0..<n { channel.deliverToClient(sdu) } }
        let got = try await consumer.value
        let deliverRate = Double(n) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        print("notification route: \(Int(routeRate)) /s, delivered to an async subscriber: \(Int(deliverRate)) /s")
        #expect(got == n)
        #expect(routeRate > 50_000)
        #expect(deliverRate > 20_000)
    }
}
