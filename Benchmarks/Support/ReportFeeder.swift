import BLETestSupport
import Dispatch
import Foundation

/// Makes the advertising reports a `ReportFeeder` sends: report `n` as H4 HCI event bytes.
protocol AdvertisingReportSource {
    /// Appends report `n` (H4 packet type and HCI event) to `buffer`; `elapsed` is the time
    /// since the feed started, in nanoseconds.
    mutating func append(report n: Int, elapsed: UInt64, to buffer: inout [UInt8])
}

/// Feeds advertising reports in real time: a 2 ms dispatch timer on `queue` hands `sink` every
/// report due at `reportsPerSecond` (at most 2,000 a tick) as one buffer, and remembers when
/// each batch went in. Into the host: `init(tap:...)` feeds the tap on the adapter queue.
final class ReportFeeder<Source: AdvertisingReportSource>: @unchecked Sendable { // all state is touched only on `queue`
    let sink: (UnsafeRawBufferPointer) -> Void
    let queue: DispatchQueue
    let reportsPerSecond: Int
    private var source: Source
    private var timer: DispatchSourceTimer?
    private var startTime: UInt64 = 0
    private var sent = 0
    private var buffer: [UInt8] = []
    /// (first report of the batch, wall-clock seconds when it was fed).
    private var batches: [(first: Int, time: Double)] = []

    convenience init(tap: TapTransport, queue: DispatchQueue, reportsPerSecond: Int, source: Source) {
        self.init(queue: queue, reportsPerSecond: reportsPerSecond, source: source) { tap.feed($0) }
    }

    init(queue: DispatchQueue, reportsPerSecond: Int, source: Source, sink: @escaping (UnsafeRawBufferPointer) -> Void) {
        self.sink = sink
        self.queue = queue
        self.reportsPerSecond = reportsPerSecond
        self.source = source
        buffer.reserveCapacity(64 * 1024)
    }

    func start() {
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now(), repeating: .milliseconds(2), leeway: .microseconds(500))
        t.setEventHandler { [unowned self] in tick() }
        queue.sync { startTime = DispatchTime.now().uptimeNanoseconds }
        timer = t
        t.resume()
    }

    /// Stops feeding; the reports sent and the seconds they took.
    func stop() -> (Int, Double) {
        queue.sync {
            timer?.cancel()
            timer = nil
            return (sent, Double(DispatchTime.now().uptimeNanoseconds - startTime) / 1e9)
        }
    }

    /// Wall-clock seconds (Unix time) at which report `n` went into the host.
    func feedTime(of n: Int) -> Double? {
        queue.sync {
            guard n < sent, !batches.isEmpty else { return nil }
            var lo = 0, hi = batches.count - 1
            while lo < hi {
                let mid = (lo + hi + 1) / 2
                if batches[mid].first <= n { lo = mid } else { hi = mid - 1 }
            }
            return batches[lo].time
        }
    }

    private func tick() {
        let elapsed = DispatchTime.now().uptimeNanoseconds - startTime
        let due = Int(elapsed / UInt64(1_000_000_000 / reportsPerSecond))
        let count = min(due - sent, 2_000)
        guard count > 0 else { return }
        buffer.removeAll(keepingCapacity: true)
        for n in sent..<(sent + count) { source.append(report: n, elapsed: elapsed, to: &buffer) }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        batches.append((sent, Double(now.tv_sec) + Double(now.tv_nsec) / 1e9))
        sent += count
        buffer.withUnsafeBytes { sink($0) }
    }
}

extension Array where Element == UInt8 {
    /// Appends an LE Advertising Report event with one report (Vol 4, Part E, 7.7.65.2):
    /// `eventType` 0x00 ADV_IND, 0x04 SCAN_RSP; `addressType` 0x01 random.
    mutating func appendLegacyReport(eventType: UInt8, addressType: UInt8 = 0x01, address: UInt64, data: [UInt8], rssi: Int8) {
        self += [0x04, 0x3E, UInt8(12 + data.count), 0x02, 0x01, eventType, addressType]
        appendAddress(address)
        append(UInt8(data.count))
        self += data
        append(UInt8(bitPattern: rssi))
    }

    /// Appends a 48-bit device address, least significant byte first.
    mutating func appendAddress(_ a: UInt64) {
        for b in 0..<6 { append(UInt8(truncatingIfNeeded: a >> (8 * b))) }
    }
}
