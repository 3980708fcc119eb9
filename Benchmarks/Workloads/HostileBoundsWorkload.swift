@_spi(Internals) import BLECore
@_spi(Internals) import BLEWire
@_spi(Internals) import BLETransport
import BLETestSupport
import Dispatch
import Foundation
import GATTClient
import Synchronization

/// More hostile cases of docs/reliability.md, most of them bounds: PDUs before the bearer
/// exists, malformed K-frames on a credit-based channel beside a healthy one, indications at
/// a consumer that does not read, the log lines of a flood of malformed packets and of
/// broken-off PDUs, and the btsnoop writer fed faster than it writes and on a slow disk. Each reports the peak growth of the resident
/// high-water mark (`Meter`) and what the bound held.
extension HostileWorkload {
    static func bounds(quick: Bool) async throws -> [Result] {
        let scale = quick ? 10 : 1
        return [
            try await pdusBeforeTheBearer(count: 10_000 / scale),
            try await malformedKFrames(count: 10_000 / scale),
            try await indicationsToAConsumerThatDoesNotRead(),
            try await malformedPacketLogLines(count: 10_000 / scale),
            try await brokenOffPDUs(count: 100_000 / scale),
            try await snoopBehindTheDisk(records: 1_000_000 / scale),
            try await snoopOnASlowDisk(records: 200_000 / scale),
        ]
    }

    /// Notifications of 503 octets (Vol 3, Part F, 3.4.7.1: 0x1B, handle 0x0003, 500 value
    /// octets), 100 per job, on a link whose ATT channel nobody has opened yet: the host holds
    /// at most 64 PDUs and 8 KiB of them until a bearer exists. Each run connects a new link.
    static func pdusBeforeTheBearer(count: Int) async throws -> Result {
        let perJob = 100
        let m = try await measure("hostile: notifications of 503 octets before the bearer exists (PDUs)", events: count, healthy: nil) { meter, plan in
            let stack = BenchStack(peripherals: 1)
            try await stack.central.powerOn()
            let connection = try await stack.central.connect(BenchStack.address(0), timeout: .seconds(5))
            guard let handle = await connection.handle else { throw BenchError("the link lost its handle") }
            let chunk = (0..<perJob).flatMap { i in
                l2capH4(handle: handle, channelID: L2CAPChannelID.att, payload: [0x1B, 0x03, 0x00] + [UInt8](repeating: UInt8(i), count: 500))
            }
            var tally = Tally()
            meter.start()
            await feed(stack, chunk, times: count / perJob, plan: plan, meter: meter, tally: &tally)
            meter.stop()
            // What was held reaches the channel's first receiver.
            let held = Atomic<Int>(0), heldBytes = Atomic<Int>(0)
            let channel = try await connection.attChannel()
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                stack.queue.async {
                    channel.setHandlers(receive: { sdu in held.add(1, ordering: .relaxed); heldBytes.add(sdu.count, ordering: .relaxed) }, close: { _ in })
                    done.resume()
                }
            }
            await stack.vc.settle()
            await stack.close()
            return ["heldUntilTheBearer": Double(held.load(ordering: .relaxed)),
                    "heldBytes": Double(heldBytes.load(ordering: .relaxed)),
                    "dropped": Double(count * plan.rounds - held.load(ordering: .relaxed))]
        }
        return Result(measurement: m, bounded: true)
    }

    /// K-frames (Vol 3, Part A, 3.4.3) whose SDU Length (0xFFFF) exceeds the channel's MTU of
    /// 512, 100 per job, on a credit-based channel beside a healthy channel of the same link
    /// that receives 20-octet SDUs, one K-frame each, taken with `receive()`. The first
    /// malformed K-frame closes its channel (a new one is opened for every run); the rest
    /// arrive for a closed channel.
    static func malformedKFrames(count: Int) async throws -> Result {
        let perJob = 100, mps = 247
        let stack = try await BenchStack.make(links: 1)
        let link = stack.links[0], tap = stack.tap
        let peer = BenchStack.address(0)
        let healthy = try await L2CAPWorkload.open(stack, link, peer: peer, peerCID: 0x0050, mtu: 512, mps: mps, credits: 1_024)
        let sdu = L2CAPWorkload.h4([[UInt8](repeating: 0x42, count: 20)], mps: mps, handle: link.handle, cid: healthy.localCID)
        let receiving = HealthyLoad(step: {
            stack.queue.async { sdu.withUnsafeBytes { tap.feed($0) } }
            guard try await healthy.receive(timeout: .seconds(10)) != nil else { throw BenchError("the healthy channel closed") }
        }, tidy: { stack.vc.clearRecords() })
        var run: UInt16 = 0
        let m = try await measure("hostile: malformed K-frames on a credit-based channel beside a healthy one (K-frames)", events: count, healthy: receiving) { meter, plan in
            run += 1
            let hostile = try await L2CAPWorkload.open(stack, link, peer: peer, peerCID: 0x0060 + run, mtu: 512, mps: mps, credits: 1_024)
            let cid = hostile.localCID
            let frame: [UInt8] = [0xFF, 0xFF] + [UInt8](repeating: 0xEE, count: 20)
            let chunk = (0..<perJob).flatMap { _ in l2capH4(handle: link.handle, channelID: cid, payload: frame) }
            var tally = Tally()
            meter.start()
            await feed(stack, chunk, times: count / perJob, plan: plan, meter: meter, tally: &tally)
            meter.stop()
            let ended = await hostile.endError
            return ["hostileChannelClosed": ended == nil ? 0 : 1]
        }
        await stack.close()
        return Result(measurement: m, bounded: true)
    }

    /// A server that indicates 500-octet values one after another, each after the previous
    /// one's confirmation (Vol 3, Part F, 3.4.7.2), at a subscriber with the default policy
    /// (the newest 1,024) that never reads: the host confirms an indication only once it is
    /// in the buffer, so the server stops at the bound and waits. The run ends once the first
    /// indication beyond the bound was handled (a read behind it on the bearer came back).
    static func indicationsToAConsumerThatDoesNotRead() async throws -> Result {
        let counter = CharacteristicIdentifier(uuid: BluetoothUUID(uuid128: 0x6E40_0004_B5A3_F393_E0A9_E50E24DCCA9E),
                                               service: ServiceIdentifier(uuid: BluetoothUUID(uuid128: 0x6E40_0001_B5A3_F393_E0A9_E50E24DCCA9E)))
        let pattern = CharacteristicIdentifier(uuid: BluetoothUUID(uuid128: 0x6E40_0002_B5A3_F393_E0A9_E50E24DCCA9E), service: counter.service)
        let bound = 1_024
        let m = try await measure("hostile: indications of 500 octets at a subscriber that never reads (default policy) (indications)", events: bound + 1, healthy: nil) { meter, _ in
            let stack = BenchStack(peripherals: 1, database: .lab())
            try await stack.central.powerOn()
            let connection = try await stack.central.connect(BenchStack.address(0), timeout: .seconds(5))
            let peripheral = try await Peripheral(connection: connection)
            let stream = try await peripheral.subscribe(to: counter, indications: true)
            let server = stack.servers[0]
            meter.start()
            var confirmed = 0
            for i in 0..<bound {
                confirmed += await server.indicate(characteristic: counter.uuid, value: [UInt8](repeating: UInt8(i & 0xFF), count: 500))
                if i == bound / 10 { meter.sampleTenth() }
                if i % 256 == 255 { stack.vc.clearRecords(); await server.clearRecords() }
            }
            // The next indication finds the buffer full: it stays unconfirmed while the server
            // waits. A read behind it on the bearer shows the host has handled it.
            let waiting = Task { await server.indicate(characteristic: counter.uuid, value: [UInt8](repeating: 0xEE, count: 500)) }
            _ = try await peripheral.read(pattern)
            meter.stop()
            waiting.cancel()
            let late = await waiting.value
            withExtendedLifetime(stream) {}
            await stack.close()
            return ["confirmedIntoTheBuffer": Double(confirmed), "confirmedBeyondTheBound": Double(late),
                    "bufferBound": Double(bound), "valueOctets": 500]
        }
        return Result(measurement: m, bounded: true)
    }

    /// Malformed LE signaling commands (one octet, too short for the command header, Vol 3,
    /// Part A, 4) and ACL packets for a handle with no link, 100 per job, with a logger that
    /// takes every level: how many lines the flood writes (each kind at most once per 10 s).
    static func malformedPacketLogLines(count: Int) async throws -> Result {
        try await loggedFlood("hostile: malformed signaling commands and ACL packets for an unknown handle, logged at debug (packets)", count: count) { handle in
            (0..<50).flatMap { i in
                l2capH4(handle: handle, channelID: L2CAPChannelID.leSignaling, payload: [0x12])
                    + l2capH4(handle: 0x0EEE, channelID: L2CAPChannelID.att, payload: [0x1B, 0x03, 0x00, UInt8(i)])
            }
        } figures: { _, tally in ["commandRejects": Double(tally.signaling)] }
    }

    /// Broken-off PDUs: start fragments of 7 of the 12 bytes of a notification (L2CAP length
    /// 8 on the ATT channel, Vol 3, Part A, 3.1), 100 per job, each discarding the one before
    /// it: every discard is counted (`discardedPartialInboundPDUs`), the log lines are
    /// limited, nothing is held but the one partial PDU.
    static func brokenOffPDUs(count: Int) async throws -> Result {
        try await loggedFlood("hostile: start fragments of PDUs that never complete, each discarding the one before, logged at debug (fragments)", count: count) { handle in
            let start = Array(l2capH4(handle: handle, channelID: L2CAPChannelID.att, payload: [0x1B, 0x03, 0x00, 1, 2, 3, 4, 5], fragment: 7).prefix(5 + 7))
            return (0..<100).flatMap { _ in start }
        } figures: { host, _ in ["partialPDUsDiscardedAndCounted": Double(await host.discardedPartialInboundPDUs)] }
    }

    /// `count` events in jobs of 100 (`chunk(handle)`, H4 bytes) on a new link of a new host
    /// each run, with a logger that takes every level: the lines the flood writes and what
    /// `figures` reads from the host and the tally.
    static func loggedFlood(_ name: String, count: Int, chunk: (UInt16) -> [UInt8],
                            figures: (HCIHost, Tally) async -> [String: Double]) async throws -> Result {
        let m = try await measure(name, events: count, healthy: nil) { meter, plan in
            // A new host each run: the lines it writes from its first hostile packet on.
            let lines = Atomic<Int>(0)
            var options = Central.Options()
            options.logger = BLELogger(label: "bench", minimumLevel: .debug) { _ in lines.add(1, ordering: .relaxed) }
            let stack = BenchStack(peripherals: 1, central: options)
            try await stack.central.powerOn()
            let connection = try await stack.central.connect(BenchStack.address(0), timeout: .seconds(5))
            guard let handle = await connection.handle else { throw BenchError("the link lost its handle") }
            var tally = Tally()
            let before = lines.load(ordering: .relaxed)
            meter.start()
            await feed(stack, chunk(handle), times: count / 100, plan: plan, meter: meter, tally: &tally)
            meter.stop()
            var out = await figures(stack.central.host, tally)
            await stack.close()
            out["logLinesWritten"] = Double(lines.load(ordering: .relaxed) - before)
            out["floodSeconds"] = meter.wallSeconds
            return out
        }
        return Result(measurement: m, bounded: true)
    }

    /// The btsnoop writer (default bound, 4 MiB pending) taking `records` ACL packets of 251
    /// octets from one thread as fast as it encodes them, faster than its own queue writes
    /// them with one write(2) each: what waits is bounded, the rest is dropped and counted.
    static func snoopBehindTheDisk(records: Int) async throws -> Result {
        try await withSnoopDirectory("ble-bench-snoop") { directory in
            var run = 0
            let m = try await measure("hostile: the btsnoop writer fed faster than it writes (records)", events: records, healthy: nil) { meter, _ in
                run += 1
                let writer = try BTSnoopWriter(path: directory.appendingPathComponent("flood-\(run).btsnoop").path, logger: .silent)
                feedSnoop(writer, records: records, meter: meter)
                let dropped = writer.droppedRecords
                writer.close()
                return ["writtenRecords": Double(writer.progress.writtenRecords), "droppedAndCounted": Double(dropped),
                        "maximumPendingBytes": Double(writer.maximumPendingBytes), "recordBytes": 251 + 1 + 4 + 24]
            }
            return Result(measurement: m, bounded: true)
        }
    }

    /// The same writer on a slow disk: each write(2) takes 100 µs more and writes at most 256
    /// bytes (a stalled USB stick or network file system), about 5,000 records of 280 bytes a
    /// second. `records` are written from one thread as fast as it encodes them: the caller
    /// never waits for the disk, what waits is bounded (4 MiB), the rest is dropped and
    /// counted, and the file read back holds whole records only, the last one carrying the
    /// drops before it.
    static func snoopOnASlowDisk(records: Int) async throws -> Result {
        let slowDisk: @Sendable (Int32, UnsafeRawPointer, Int) -> Int = { fd, buffer, count in
            usleep(100)
            return Glibc.write(fd, buffer, min(count, 256))
        }
        return try await withSnoopDirectory("ble-bench-slow-snoop") { directory in
            var run = 0
            let m = try await measure("hostile: the btsnoop writer on a slow disk, 100 µs and at most 256 bytes per write(2) (records)", events: records, healthy: nil) { meter, _ in
                run += 1
                let path = directory.appendingPathComponent("slow-\(run).btsnoop").path
                let writer = try BTSnoopWriter(path: path, logger: .silent, write: slowDisk)
                let began = DispatchTime.now().uptimeNanoseconds
                feedSnoop(writer, records: records, meter: meter)
                let dropped = writer.droppedRecords
                let closing = DispatchTime.now().uptimeNanoseconds
                writer.close()
                let ended = DispatchTime.now().uptimeNanoseconds
                let written = writer.progress.writtenRecords
                let capture = try BTSnoopReader(bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
                guard capture.records.count == written, capture.trailingError == nil, written + dropped == records else {
                    throw BenchError("the slow disk's capture holds \(capture.records.count) records (\(written) written, \(dropped) dropped of \(records)), trailing error \(String(describing: capture.trailingError))")
                }
                try? FileManager.default.removeItem(atPath: path)
                return ["writtenRecords": Double(written), "droppedAndCounted": Double(dropped),
                        "dropsInTheLastRecord": Double(capture.records.last?.drops ?? 0),
                        "callerNanosecondsPerRecord": meter.wallSeconds * 1e9 / Double(records),
                        "diskRecordsPerSecond": Double(written) / (Double(ended - began) / 1e9),
                        "closeSeconds": Double(ended - closing) / 1e9,
                        "maximumPendingBytes": Double(writer.maximumPendingBytes)]
            }
            return Result(measurement: m, bounded: true)
        }
    }

    /// Runs `body` with a new directory for its captures, removed afterwards.
    static func withSnoopDirectory(_ name: String, _ body: (URL) async throws -> Result) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory)
    }

    /// Writes `records` ACL packets of 251 octets (records of 280 bytes: 24-byte record
    /// header, H4 type, 4-byte ACL header) from this thread as fast as they encode, measured.
    static func feedSnoop(_ writer: BTSnoopWriter, records: Int, meter: Meter) {
        let packet = HCIPacket.acl(ACLDataPacket(handle: 0x0040, boundary: .firstFlushable, data: [UInt8](repeating: 0x5A, count: 251)))
        meter.start()
        for i in 0..<records {
            writer.write(packet, direction: .received)
            if i == records / 10 { meter.sampleTenth() }
        }
        meter.stop()
    }
}
