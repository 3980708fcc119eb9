import BLECore
import Dispatch
import Foundation
import GATTClient
#if canImport(Glibc)
import Glibc
#endif
import BLETransport

/// W5: latency from a socket write to the subscriber. The host reads a real AF_UNIX stream
/// socket through `StreamTransport` (alongside the virtual controller that set the link up);
/// each notification carries the time it was written, the subscriber takes the time it got it.
enum LatencyWorkload {
    static func run(samples: Int, directory: URL) async throws -> Measurement {
        let path = directory.appendingPathComponent("latency.sock").path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw BenchError("socket: errno \(errno)") }
        defer { close(listener) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in path.utf8.prefix(p.count - 1).enumerated() { p[i] = b }
        }
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard bound == 0, listen(listener, 1) == 0 else { throw BenchError("bind/listen \(path): errno \(errno)") }
        let transport = try StreamTransport.connect(unixPath: path)
        let writer = accept(listener, nil, nil)
        guard writer >= 0 else { throw BenchError("accept: errno \(errno)") }
        defer { close(writer) }

        let stack = try await BenchStack.make(links: 1, extra: transport)
        let link = stack.links[0]
        let stream = try await link.peripheral.subscribe(to: link.measurement)
        let received = DispatchSemaphore(value: 0)
        let consumer = Task.detached { () -> [UInt64] in
            var latencies: [UInt64] = []
            latencies.reserveCapacity(samples)
            for try await value in stream {
                let now = DispatchTime.now().uptimeNanoseconds
                guard value.count == 9, value[0] == 0x01 else { continue }
                var sent: UInt64 = 0
                for i in 0..<8 { sent |= UInt64(value[1 + i]) << (8 * UInt64(i)) }
                latencies.append(now &- sent)
                received.signal()
                if latencies.count == samples { break }
            }
            return latencies
        }
        let handle = link.handle, valueHandle = link.valueHandle
        // A plain thread: it blocks between writes, which a task must not do.
        let timeouts: Int = await withCheckedContinuation { done in
          Thread {
            var timeouts = 0
            for _ in 0..<samples {
                let now = DispatchTime.now().uptimeNanoseconds
                var value: [UInt8] = [0x01]
                for i in 0..<8 { value.append(UInt8(truncatingIfNeeded: now >> (8 * UInt64(i)))) }
                let bytes = notificationH4(handle: handle, valueHandle: valueHandle, value: value)
                let n = bytes.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
                if n != bytes.count { timeouts += 1; break }
                if received.wait(timeout: .now() + 1) == .timedOut { timeouts += 1 }
            }
            done.resume(returning: timeouts)
          }.start()
        }
        guard timeouts == 0 else { throw BenchError("latency: \(timeouts) notifications not delivered within 1 s") }
        let sorted = try await consumer.value.sorted()
        await stack.close()
        func pct(_ p: Double) -> Double { Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000 }
        var m = Measurement(name: "W5 latency: socket write -> subscriber (µs)", operations: samples, seconds: 0, operationsPerSecond: 0)
        m.extra = ["p50Microseconds": pct(0.50), "p99Microseconds": pct(0.99), "maxMicroseconds": Double(sorted.last ?? 0) / 1000]
        return m
    }
}
