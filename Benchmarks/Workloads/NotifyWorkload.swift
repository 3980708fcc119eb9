import BLECore
import Dispatch
import GATTClient
import Synchronization

/// W2: H4 ACL packets carrying Handle Value Notifications -> framer -> HCIHost (reassembly,
/// L2CAP, fixed channel) -> ATT bearer -> the Peripheral's notification table -> subscribers.
enum NotifyWorkload {
    /// Measured notifications carry [0x01, n]; warm-up ones [0x00, 0].
    static func batch(_ links: [BenchStack.Link], rounds: Int, marker: UInt8 = 0x01) -> [UInt8] {
        var out: [UInt8] = []
        for r in 0..<rounds {
            for l in links { out += notificationH4(handle: l.handle, valueHandle: l.valueHandle, value: [marker, UInt8(truncatingIfNeeded: r)]) }
        }
        return out
    }

    /// (a) Decode and route: the characteristic has a route with no subscriber left, so this
    /// is everything up to the dispatcher, without the stream delivery.
    static func route(_ stack: BenchStack, notifications n: Int, runs: Int) async throws -> Measurement {
        let link = stack.links[0]
        _ = try await link.peripheral.subscribe(to: link.measurement) // dropped at once: the route stays, empty
        stack.queue.sync {}
        let perBatch = 1000
        let bytes = batch([link], rounds: perBatch)
        let tap = stack.tap
        return measure("W2a notify: H4 -> host -> L2CAP -> ATT -> route (no subscriber)", operations: n, runs: runs) {
            stack.queue.sync {
                bytes.withUnsafeBytes { raw in
                    for _ in 0..<(n / perBatch) { tap.feed(raw) }
                }
            }
        }
    }

    final class Progress: Sendable {
        let started = Atomic<Int>(0)
    }

    /// (b) Delivered to `subscribers` consumers per link of `links`, each iterating
    /// a stream from `peripheral.subscribe(to:)`; `perLink` notifications are sent on every link.
    static func deliver(_ stack: BenchStack, name: String, links: Int, subscribers: Int, perLink: Int, runs: Int) async throws -> Measurement {
        let used = Array(stack.links.prefix(links))
        let rounds = 256
        let bytes = batch(used, rounds: rounds)
        let warm = batch(used, rounds: 1, marker: 0x00)
        let tap = stack.tap
        let batches = perLink / rounds
        let delivered = batches * rounds * links * subscribers
        var times = RunTimes()
        for _ in 0..<runs {
            let progress = Progress()
            var consumers: [Task<Int, any Error>] = []
            for link in used {
                for _ in 0..<subscribers {
                    // Unbounded: every value is counted (the default bound drops the oldest while behind).
                    let stream = try await link.peripheral.subscribe(to: link.measurement, bufferingPolicy: .unbounded)
                    let target = batches * rounds
                    consumers.append(Task.detached {
                        var seen = 0
                        var first = true
                        for try await value in stream {
                            if first { first = false; progress.started.add(1, ordering: .relaxed) }
                            guard value.first == 0x01 else { continue }
                            seen += 1
                            if seen == target { break }
                        }
                        return seen
                    })
                }
            }
            // Warm up until every consumer has subscribed and received a value.
            let deadline = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
            while progress.started.load(ordering: .relaxed) < consumers.count {
                guard DispatchTime.now().uptimeNanoseconds < deadline else { throw BenchError("\(name): subscribers did not start") }
                stack.queue.async { warm.withUnsafeBytes { tap.feed($0) } }
                try await Task.sleep(for: .milliseconds(2))
            }
            stack.queue.sync {}
            let mark = RunTimes.start()
            for _ in 0..<batches {
                stack.queue.async { bytes.withUnsafeBytes { tap.feed($0) } }
            }
            var total = 0
            for c in consumers { total += try await c.value }
            times.record(since: mark)
            guard total == delivered else { throw BenchError("\(name): delivered \(total) of \(delivered)") }
            stack.queue.sync {}
        }
        return times.measurement(name, operations: delivered)
    }
}
