import BLECore
import BLETestSupport
import Foundation
import BLEWire

/// l2cap: LE credit-based channel data (Core Spec 5.4 Vol 3, Part A, 3.4 and 10.1), in SDU
/// bytes per second. Two paths:
/// - frames: `KFrameSegmenter.segments` splits each SDU into K-frame payloads at the MPS and
///   a `KFrameReassembler` rebuilds it (one thread, no I/O);
/// - host: H4 ACL packets, each one whole L2CAP PDU carrying one K-frame, fed through the
///   framer into `HCIHost` (ACL reassembly, routing by CID, credit accounting) to a
///   `CreditBasedChannel` opened on a virtual-controller link, and taken with `receive()`,
///   which returns credits to the peer as the application consumes.
enum L2CAPWorkload {
    static let psm: UInt16 = 0x0080
    static let peerCID: UInt16 = 0x0050

    /// K-frames (and credits) one SDU of `size` bytes takes.
    static func framesPerSDU(_ size: Int, mps: Int) -> Int { KFrameSegmenter.frameCount(sduSize: size, mps: mps) }

    /// `count` SDUs of `size` bytes with distinct contents.
    static func sdus(size: Int, count: Int) -> [[UInt8]] {
        (0..<count).map { i in (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) } }
    }

    /// H4 bytes of the K-frames of `sdus` on `cid` of link `handle`: one ACL packet (PB 0b10)
    /// per K-frame, each a whole L2CAP PDU (Vol 3, Part A, 3.4).
    static func h4(_ sdus: [[UInt8]], mps: Int, handle: UInt16, cid: UInt16) -> [UInt8] {
        var out: [UInt8] = []
        let hf = handle | 0x2000
        for sdu in sdus {
            for frame in KFrameSegmenter.segments(of: sdu, mps: mps) {
                let length = frame.count + 4
                out += [0x02, UInt8(hf & 0xFF), UInt8(hf >> 8), UInt8(length & 0xFF), UInt8(length >> 8)]
                out += [UInt8(frame.count & 0xFF), UInt8(frame.count >> 8), UInt8(cid & 0xFF), UInt8(cid >> 8)]
                out += frame
            }
        }
        return out
    }

    /// Segments every SDU and reassembles it; SDU bytes per second.
    static func frames(name: String, sdus: [[UInt8]], mps: Int, runs: Int) -> Measurement {
        let total = sdus.reduce(0) { $0 + $1.count }
        let mtu = max(23, sdus.map(\.count).max() ?? 0)
        var received = 0
        var m = measure(name, operations: total, runs: runs) {
            received = 0
            var reassembler = KFrameReassembler(mtu: mtu, mps: mps)
            for sdu in sdus {
                for frame in KFrameSegmenter.segments(of: sdu, mps: mps) {
                    if let done = try? reassembler.receive(frame[...]) { received += done.sdu.count }
                }
            }
        }
        precondition(received == total, "reassembled \(received) of \(total) bytes")
        m.extra.merge(cpuShare(bytesPerSecond: m.operationsPerSecond, cpuSecondsPerByte: (m.extra["cpuNanosecondsPerOperation"] ?? .nan) / 1e9,
                               sduSize: sdus.first?.count ?? 0, mps: mps)) { $1 }
        return m
    }

    /// K-frames through the host to one channel; SDU bytes per second (wall clock, the median
    /// run) and the process CPU time they took (the median run's).
    /// `onChannel`: the SDUs are taken by code isolated to the channel (its adapter executor),
    /// so `receive()` costs no hop between threads; otherwise by this task, as an
    /// application's task pays (a hop each way per batch of the SDUs waiting).
    static func host(name: String, sduSize: Int, mps: Int, perRound: Int, rounds: Int, runs: Int, onChannel: Bool) async throws -> (Measurement, bumbleInput: [UInt8], packets: Int) {
        let stack = try await BenchStack.make(links: 1)
        defer { Task { await stack.close() } }
        let link = stack.links[0]
        let framesPerRound = perRound * KFrameSegmenter.frameCount(sduSize: sduSize, mps: mps)
        // Credits are returned in quarters of the window, so a round of at most half of it
        // always finds enough.
        let window = min(65535, max(8, 2 * framesPerRound))
        precondition(framesPerRound <= window / 2, "a round of \(framesPerRound) K-frames needs a window above 65535")
        let channel = try await open(stack, link, peer: BenchStack.address(0), peerCID: peerCID, mtu: max(23, sduSize), mps: mps, credits: window)
        let round = sdus(size: sduSize, count: perRound)
        let bytes = h4(round, mps: mps, handle: link.handle, cid: channel.localCID)
        let tap = stack.tap
        let total = perRound * sduSize * rounds
        var times = RunTimes()
        for _ in 0..<runs {
            let mark = RunTimes.start()
            var received = 0
            var last: [UInt8] = []
            for _ in 0..<rounds {
                stack.queue.async { bytes.withUnsafeBytes { tap.feed($0) } }
                let (n, sdu) = onChannel ? try await take(perRound, from: channel) : try await take(perRound, across: channel)
                received += n
                last = sdu
            }
            times.record(since: mark)
            guard received == total, last == round.last else { throw BenchError("received \(received) of \(total) bytes, or the last SDU differs") }
            // Let the credit indications of the run reach the controller, then forget them.
            await stack.vc.settle()
            stack.vc.clearRecords()
        }
        await channel.close(timeout: .seconds(2))
        var m = times.measurement(name, operations: total)
        m.extra.merge(cpuShare(bytesPerSecond: m.operationsPerSecond, cpuSecondsPerByte: RunTimes.median(times.cpu) / Double(total), sduSize: sduSize, mps: mps)) { $1 }
        m.extra["cpuSecondsPerWallSecond"] = RunTimes.median(times.cpu) / m.seconds
        return (m, bytes, framesPerRound)
    }

    /// Opens an LE credit-based channel on `link` that grants the peer `credits`, the bench
    /// answering the LE Credit Based Connection Request as the peer (Vol 3, Part A, 4.22 and
    /// 4.23) with `peerCID` and 8 credits.
    static func open(_ stack: BenchStack, _ link: BenchStack.Link, peer: LEAddress, peerCID: UInt16, mtu: Int, mps: Int, credits: Int) async throws -> CreditBasedChannel {
        stack.vc.clearRecords()
        let opening = Task { try await link.connection.openL2CAPChannel(psm: psm, mtu: mtu, mps: mps, credits: credits) }
        let request = try await stack.vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        let command = try L2CAPSignalingCommand(bytes: request.payload)
        try stack.vc.sendSignaling(from: peer, L2CAPSignalingCommand(identifier: command.identifier, body: .leCreditBasedConnectionResponse(
            destinationCID: peerCID, mtu: UInt16(mtu), mps: UInt16(mps), initialCredits: 8, result: 0)))
        return try await opening.value
    }

    /// Takes `count` SDUs on the channel's executor; their bytes and the last one.
    static func take(_ count: Int, from channel: isolated CreditBasedChannel) async throws -> (Int, [UInt8]) {
        var received = 0
        var last: [UInt8] = []
        for _ in 0..<count {
            guard let sdu = try await channel.receive(timeout: .seconds(10)) else { throw BenchError("the channel closed: \(String(describing: channel.endError))") }
            received += sdu.count
            last = sdu
        }
        return (received, last)
    }

    /// Takes `count` SDUs from this task (a hop to the channel's executor and back per SDU).
    static func take(_ count: Int, across channel: CreditBasedChannel) async throws -> (Int, [UInt8]) {
        var received = 0
        var last: [UInt8] = []
        for _ in 0..<count {
            guard let sdu = try await channel.receive(timeout: .seconds(10)) else { throw BenchError("the channel closed: \(String(describing: await channel.endError))") }
            received += sdu.count
            last = sdu
        }
        return (received, last)
    }

    /// The CPU share of one link: at 1.4 Mbit/s (175,000 bytes/s, what a 2M PHY link carries in
    /// full-size K-frames), and at the most the radio carries in SDUs of this size (`RadioLimit`).
    static func cpuShare(bytesPerSecond: Double, cpuSecondsPerByte: Double, sduSize: Int, mps: Int) -> [String: Double] {
        let radio = 1_400_000.0 / 8
        let limit = RadioLimit.sduBytesPerSecond(sduSize: sduSize, mps: mps)
        return [
            "megabytesPerSecond": bytesPerSecond / 1e6,
            "cpuNanosecondsPerByte": cpuSecondsPerByte * 1e9,
            "megabytesPerCPUSecond": 1e-6 / cpuSecondsPerByte,
            "cpuPercentOfOneCoreAt1_4Mbit": cpuSecondsPerByte * radio * 100,
            "radioLimitBytesPerSecond": limit,
            "cpuPercentOfOneCoreAtRadioLimit": cpuSecondsPerByte * limit * 100,
            "sduBytes": Double(sduSize),
            "mps": Double(mps),
        ]
    }

}
