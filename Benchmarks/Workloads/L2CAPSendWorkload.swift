import BLECore
import BLETestSupport
import Foundation
import BLEWire

/// l2cap send: SDUs from an application's task through `CreditBasedChannel.send` (credits,
/// K-frame segmentation at the peer's MPS) and the host's ACL queue (fragmentation,
/// controller buffers) to the transport, in SDU bytes per second. The transport takes the
/// ACL packets itself, with no controller behind it, and reports them completed in batches
/// as a controller's Number Of Completed Packets does; the peer grants each round's credits
/// with one Flow Control Credit Indication before the round (Core Spec 5.4 Vol 3, Part A, 4.24).
enum L2CAPSendWorkload {
    /// Counts the ACL data the host sent and completes its packets, on the adapter queue.
    final class Sink: @unchecked Sendable { // every field is touched only on the adapter queue
        let tap: TapTransport
        let queue: DispatchQueue
        let handle: UInt16
        var bytes = 0
        var lastPacket: [UInt8] = []
        var uncompleted = 0
        var target = Int.max
        var waiter: CheckedContinuation<Void, Never>?

        init(tap: TapTransport, queue: DispatchQueue, handle: UInt16) {
            self.tap = tap
            self.queue = queue
            self.handle = handle
        }

        func take(_ packet: ACLDataPacket) {
            bytes += packet.data.count
            lastPacket = packet.data
            uncompleted += 1
            if uncompleted == 1 { queue.async { self.complete() } }
            if bytes >= target, let waiter {
                self.waiter = nil
                waiter.resume()
            }
        }

        /// HCI_Number_Of_Completed_Packets for every packet taken since the last one (Vol 4, Part E, 7.7.19).
        func complete() {
            let n = uncompleted
            uncompleted = 0
            let event: [UInt8] = [0x04, 0x13, 5, 1, UInt8(handle & 0xFF), UInt8(handle >> 8), UInt8(n & 0xFF), UInt8(n >> 8)]
            event.withUnsafeBytes { tap.feed($0) }
        }

        func wait(forBytes goal: Int, _ c: CheckedContinuation<Void, Never>) {
            if bytes >= goal { return c.resume() }
            target = goal
            waiter = c
        }
    }

    /// H4 bytes of a Flow Control Credit Indication from the peer for its channel `cid`.
    static func creditIndication(handle: UInt16, cid: UInt16, credits: Int) -> [UInt8] {
        let command = L2CAPSignalingCommand(identifier: 1, body: .flowControlCreditIndication(cid: cid, credits: UInt16(credits))).bytes
        let length = command.count + 4
        let hf = handle | 0x2000
        return [0x02, UInt8(hf & 0xFF), UInt8(hf >> 8), UInt8(length & 0xFF), UInt8(length >> 8),
                UInt8(command.count & 0xFF), UInt8(command.count >> 8), 0x05, 0x00] + command
    }

    /// `perRound` SDUs of `sduSize` bytes sent from this task per round, `rounds` rounds.
    static func run(name: String, sduSize: Int, mps: Int, perRound: Int, rounds: Int, runs: Int) async throws -> Measurement {
        let stack = try await BenchStack.make(links: 1)
        defer { Task { await stack.close() } }
        let link = stack.links[0]
        let framesPerSDU = KFrameSegmenter.frameCount(sduSize: sduSize, mps: mps)
        let framesPerRound = perRound * framesPerSDU
        precondition(framesPerRound <= 65535, "a round of \(framesPerRound) K-frames needs more than one credit indication")
        let mtu = max(23, sduSize)
        let opening = Task { try await link.connection.openL2CAPChannel(psm: L2CAPWorkload.psm, mtu: mtu, mps: mps) }
        let request = try await stack.vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        let command = try L2CAPSignalingCommand(bytes: request.payload)
        try stack.vc.sendSignaling(from: BenchStack.address(0), L2CAPSignalingCommand(identifier: command.identifier, body: .leCreditBasedConnectionResponse(
            destinationCID: L2CAPWorkload.peerCID, mtu: UInt16(mtu), mps: UInt16(mps), initialCredits: 0, result: 0)))
        let channel = try await opening.value
        // A round's K-frames wait on the link until the controller's buffers take them.
        await stack.central.host.setACLLimits(linkQueueBytes: 1 << 26)
        let sink = Sink(tap: stack.tap, queue: stack.queue, handle: link.handle)
        stack.queue.sync { stack.tap.aclSink = sink.take }
        let round = L2CAPWorkload.sdus(size: sduSize, count: perRound)
        let grant = creditIndication(handle: link.handle, cid: L2CAPWorkload.peerCID, credits: framesPerRound)
        // ACL data per round: a 4-byte L2CAP header per K-frame and a 2-byte SDU Length per SDU.
        let roundBytes = perRound * (sduSize + 2 + 4 * framesPerSDU)
        let lastFrame = KFrameSegmenter.segments(of: round[perRound - 1], mps: mps).last ?? []
        let lastPDU = [UInt8(lastFrame.count & 0xFF), UInt8(lastFrame.count >> 8), UInt8(L2CAPWorkload.peerCID & 0xFF), UInt8(L2CAPWorkload.peerCID >> 8)] + lastFrame
        let tap = stack.tap
        let total = perRound * sduSize * rounds
        var goal = 0
        var times = RunTimes()
        for _ in 0..<runs {
            let mark = RunTimes.start()
            for _ in 0..<rounds {
                stack.queue.async { grant.withUnsafeBytes { tap.feed($0) } }
                for sdu in round { try await channel.send(sdu, timeout: .seconds(10)) }
                goal += roundBytes
                let target = goal
                await withCheckedContinuation { c in stack.queue.async { sink.wait(forBytes: target, c) } }
            }
            times.record(since: mark)
            let (sent, last) = stack.queue.sync { (sink.bytes, sink.lastPacket) }
            guard sent == goal, last == lastPDU else { throw BenchError("sent \(sent) of \(goal) ACL bytes, or the last K-frame differs") }
        }
        let stalls = await channel.creditStalls
        var m = times.measurement(name, operations: total)
        let cpu = RunTimes.median(times.cpu)
        m.extra.merge(L2CAPWorkload.cpuShare(bytesPerSecond: m.operationsPerSecond, cpuSecondsPerByte: cpu / Double(total), sduSize: sduSize, mps: mps)) { $1 }
        m.extra["creditStalls"] = Double(stalls)
        m.extra["cpuSecondsPerWallSecond"] = cpu / m.seconds
        return m
    }
}
