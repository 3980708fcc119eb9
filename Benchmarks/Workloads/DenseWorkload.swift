import BLECore
import BLETestSupport
import Dispatch
import Foundation
import BLEWire

/// Dense scene: 500 advertisers reported at 10,000 reports/s (real time, a dispatch timer on
/// the adapter queue) as H4 LE Advertising Report events through the host and `Central.scan`,
/// with two scan subscribers (every report; only service 180D) and a `discoveredPeripherals()`
/// list. Every `rotation` a tenth of the advertisers take new addresses, as resolvable private
/// addresses do, so the old ones are lost and the device table must shrink back. Resident
/// memory and the table size are sampled every second.
enum DenseWorkload {
    static let advertisers = 500
    static let reportsPerSecond = 10_000
    static let lostTimeout: Duration = .seconds(2)

    struct Counts: Sendable {
        var discovered = 0, updated = 0, lost = 0
        mutating func count(_ e: ScanEvent) {
            switch e {
            case .discovered: discovered += 1
            case .updated: updated += 1
            case .lost: lost += 1
            }
        }
    }

    static func run(seconds: Int) async throws -> Measurement {
        var options = VirtualController.Options()
        options.time = .immediate   // no virtual clock: the central's timers run in real time
        let vc = VirtualController(options: options)
        let tap = TapTransport(vc.makeTransport())
        let central = Central(transport: tap, options: vc.centralOptions())
        try await central.powerOn()

        let rotation = seconds >= 60 ? 10 : 3
        let warmUp = rotation + 3
        let all = await central.scan(options: ScanOptions(allowDuplicates: true, lostTimeout: lostTimeout))
        let heartRate = await central.scan(filter: ScanFilter(services: [BluetoothUUID(uuid16: 0x180D)]),
                                     options: ScanOptions(lostTimeout: lostTimeout))
        let list = await central.discoveredPeripherals(options: ScanOptions(lostTimeout: lostTimeout), interval: .milliseconds(250))
        let allTask = Task { var c = Counts(); do { for try await e in all { c.count(e) } } catch {}; return c }
        let heartRateTask = Task { var c = Counts(); do { for try await e in heartRate { c.count(e) } } catch {}; return c }
        let listTask = Task { var lists = 0, largest = 0; for await l in list { lists += 1; largest = max(largest, l.count) }; return (lists, largest) }
        let ready = ContinuousClock.now + .seconds(5)
        while await central.scanStatistics().subscriberCount < 3 || !vc.isScanning {
            guard ContinuousClock.now < ready else { throw BenchError("the scan did not start within 5 s") }
            await Task.yield()
        }

        let feeder = ReportFeeder(tap: tap, queue: vc.adapterExecutor.queue, reportsPerSecond: reportsPerSecond,
                                  source: DenseReports(rotationSeconds: rotation))
        let cpuStart = cpuSeconds()
        var rss: [Int] = [residentBytes()]
        var table: [Int] = [0]
        feeder.start()
        let start = ContinuousClock.now
        for s in 1...seconds {
            try await Task.sleep(until: start + .seconds(s), clock: .continuous)
            rss.append(residentBytes())
            table.append(await central.scanStatistics().deviceCount)
        }
        let (sent, elapsed) = feeder.stop()
        let cpu = cpuSeconds() - cpuStart
        allTask.cancel(); heartRateTask.cancel(); listTask.cancel()
        let (allCounts, heartRateCounts, (lists, largestList)) = (await allTask.value, await heartRateTask.value, await listTask.value)
        // Every subscriber gone: the table must be empty.
        let left = ContinuousClock.now + .seconds(5)
        while await central.scanStatistics().subscriberCount > 0, ContinuousClock.now < left { await Task.yield() }
        let tableAfter = await central.scanStatistics().deviceCount
        await central.close()

        let steady = Array(rss[warmUp...])
        let slope = slopePerMinute(steady)
        let rssWarm = rss[warmUp], rssEnd = rss[rss.count - 1]
        // Live advertisers plus the tenth that rotated and is not yet past the lost timeout.
        let tableBound = advertisers + advertisers / 10
        let tableMax = table[warmUp...].max() ?? 0
        // Flat: no growth beyond 1 MiB after warm-up (a shrinking heap is flat too).
        let flat = rssEnd - rssWarm <= 1 << 20 && tableMax <= tableBound && tableAfter == 0
        var m = Measurement(name: "dense scene: 500 advertisers, 10,000 reports/s, 2 scans + list, 10% rotating every \(rotation) s (reports)",
                            operations: sent, seconds: elapsed, operationsPerSecond: Double(sent) / elapsed)
        m.extra = [
            "seconds": elapsed, "cpuMicrosecondsPerReport": cpu * 1e6 / Double(max(sent, 1)),
            "residentBytesStart": Double(rss[0]), "residentBytesAfterWarmUp": Double(rssWarm), "residentBytesEnd": Double(rssEnd),
            "residentBytesMaxAfterWarmUp": Double(steady.max() ?? 0),
            "slopeBytesPerMinute": slope,
            "deviceTableMaxAfterWarmUp": Double(tableMax), "deviceTableEnd": Double(table[table.count - 1]),
            "deviceTableBound": Double(tableBound), "deviceTableAfterSubscribersLeft": Double(tableAfter),
            "allDiscovered": Double(allCounts.discovered), "allUpdated": Double(allCounts.updated), "allLost": Double(allCounts.lost),
            "heartRateDiscovered": Double(heartRateCounts.discovered), "heartRateUpdated": Double(heartRateCounts.updated),
            "heartRateLost": Double(heartRateCounts.lost), "lists": Double(lists), "largestList": Double(largestList),
            "flat": flat ? 1 : 0,
        ]
        for (s, n) in table.enumerated() where s % 5 == 0 { m.extra[String(format: "deviceTableAt%02ds", s)] = Double(n) }
        FileHandle.standardError.write(Data("dense: rss per second \(rss)\ndense: device table per second \(table)\n".utf8))
        return m
    }

    /// Least-squares slope of one sample per second, in bytes per minute.
    static func slopePerMinute(_ y: [Int]) -> Double {
        guard y.count > 1 else { return 0 }
        let n = Double(y.count)
        let mx = (n - 1) / 2, my = Double(y.reduce(0, +)) / n
        var num = 0.0, den = 0.0
        for (i, v) in y.enumerated() { num += (Double(i) - mx) * (Double(v) - my); den += (Double(i) - mx) * (Double(i) - mx) }
        return num / den * 60
    }

    static func cpuSeconds() -> Double {
        var u = rusage()
        getrusage(RUSAGE_SELF.rawValue, &u)
        return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6
    }
}

/// The dense scene's reports; a tenth of the advertisers take new addresses every rotation.
struct DenseReports: AdvertisingReportSource {
    let rotationNanoseconds: UInt64
    /// Per advertiser: how many times it took a new address.
    private var generation = [UInt32](repeating: 0, count: DenseWorkload.advertisers)
    private var rotations: UInt64 = 0

    init(rotationSeconds: Int) {
        rotationNanoseconds = UInt64(rotationSeconds) * 1_000_000_000
    }

    /// Report `n`: advertiser n % 500 in round n / 500. Kinds by advertiser % 4: legacy
    /// ADV_IND with a scan response every other round, random static address; legacy ADV_IND
    /// with a resolvable private address and 180D; extended connectable, random static;
    /// extended with a resolvable private address and 180D.
    mutating func append(report n: Int, elapsed: UInt64, to buffer: inout [UInt8]) {
        // A tenth of the advertisers move to new addresses every rotation period.
        while rotations < elapsed / rotationNanoseconds {
            rotations += 1
            let k = DenseWorkload.advertisers / 10
            let first = Int(rotations - 1) * k % DenseWorkload.advertisers
            for i in first..<(first + k) { generation[i % DenseWorkload.advertisers] += 1 }
        }
        let i = n % DenseWorkload.advertisers
        let round = n / DenseWorkload.advertisers
        let kind = i % 4
        // Random static: the two top bits 0b11; resolvable private: 0b01 (Vol 6, Part B, 1.3.2).
        let top: UInt64 = kind % 2 == 0 ? 0xC0_00_00_00_00_00 : 0x40_00_00_00_00_00
        let address = top | UInt64(i) << 24 | UInt64(generation[i] & 0xFF_FFFF)
        let rssi = Int8(-45 - (i + round / 3) % 30)
        let counter = UInt8(truncatingIfNeeded: round / 8)   // manufacturer data changes every 8 rounds
        var ad: [UInt8] = [0x02, 0x01, 0x06]
        if kind % 2 == 1 { ad += [0x03, 0x03, 0x0D, 0x18] }
        ad += [0x07, 0xFF, 0x59, 0x00, UInt8(i & 0xFF), UInt8(i >> 8), counter, UInt8(kind)]
        let scanResponse = kind == 0 && round % 2 == 1
        if scanResponse || kind >= 2 {
            let name = Array("dense-\(i)".utf8)
            if scanResponse { ad = [] }
            ad += [UInt8(name.count + 1), 0x09] + name
        }
        if kind < 2 {
            // ADV_IND 0x00 or SCAN_RSP 0x04.
            buffer.appendLegacyReport(eventType: scanResponse ? 0x04 : 0x00, address: address, data: ad, rssi: rssi)
        } else {
            // LE Extended Advertising Report (Vol 4, Part E, 7.7.65.13): connectable, complete,
            // LE 1M primary, no secondary PHY, SID, no TX power, RSSI, no periodic advertising.
            buffer += [0x04, 0x3E, UInt8(26 + ad.count), 0x0D, 0x01, 0x01, 0x00, 0x01]
            buffer.appendAddress(address)
            buffer += [0x01, 0x00, UInt8(i % 16), 0x7F, UInt8(bitPattern: rssi), 0x00, 0x00, 0x00]
            buffer += [0, 0, 0, 0, 0, 0]
            buffer.append(UInt8(ad.count))
            buffer += ad
        }
    }
}
