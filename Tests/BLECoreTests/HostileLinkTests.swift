import Synchronization
import Testing
@testable import BLECore
@testable import BLETransport
@testable import BLETestSupport
import BLEWire

/// One misbehaving peer or controller never stalls, bloats or crashes the host: the other
/// links keep working, memory stays bounded, errors are typed. Virtual time only; bytes from
/// the Core Specification (Vol 3, Part A: 3.1 basic header, 4.1 Command Reject, 4.20/4.21
/// Connection Parameter Update; Vol 3, Part H, 3.5.1 Pairing Request; Vol 4, Part E, 7.7.65.1
/// and 7.7.65.3 LE Connection Complete and LE Connection Update Complete).
@Suite(.timeLimit(.minutes(1)))
struct HostileLinkTests {
    static let peerB = LEAddress(BluetoothAddress(rawValue: 0xC0_66_77_88_99_AA), type: .random)

    /// Records every log line of the stack.
    final class LogLines: Sendable {
        let records = Mutex<[BLELogRecord]>([])
        var logger: BLELogger { BLELogger(label: "test", minimumLevel: .debug) { [self] r in records.withLock { $0.append(r) } } }
        func matching(_ text: String) -> [String] { records.withLock { $0.map(\.message).filter { $0.contains(text) } } }
    }

    /// A Write Command (Vol 3, Part F, 3.4.5.3: opcode 0x52, handle 0x0003) carrying `value`.
    static func writeCommand(_ value: UInt8) -> [UInt8] { [0x52, 0x03, 0x00, value] }

    /// Links to `VC.peer` (handle `a`) and `peerB` (handle `b`), each to an echo server, on a
    /// controller with 4 ACL buffers whose packets complete only when the test says so.
    static func twoLinksWithManualCompletion() async throws -> (VirtualController, Central, EchoATTServer, EchoATTServer, UInt16, UInt16) {
        let serverA = EchoATTServer(), serverB = EchoATTServer()
        let (vc, central) = try await VC.stack({ o in o.aclPacketCount = 4; o.packetCompletion = .manual }, server: serverA)
        vc.addPeripheral(SimulatedPeripheral(address: Self.peerB, advertisingData: [0x02, 0x01, 0x06], attServer: serverB))
        _ = try await central.connect(VC.peer)
        _ = try await central.connect(Self.peerB)
        let a = try #require(vc.handle(of: VC.peer)), b = try #require(vc.handle(of: Self.peerB))
        return (vc, central, serverA, serverB, a, b)
    }

    /// Sends Write Commands 1 and 2 on link `a`, whose peer never completes them (its share of
    /// 4 buffers on 2 links), then `values` from tasks of their own; returns once all of those wait.
    static func stall(_ host: HCIHost, _ a: UInt16, queuing values: ClosedRange<UInt8>) async throws -> [Task<Void, any Error>] {
        let att = L2CAPChannelID.att
        try await host.sendL2CAP(handle: a, channelID: att, payload: writeCommand(1))
        try await host.sendL2CAP(handle: a, channelID: att, payload: writeCommand(2))
        let queued = values.map { i in Task { try await host.sendL2CAP(handle: a, channelID: att, payload: writeCommand(i)) } }
        try await host.sendWaiters.waitForCount("\(values.count) sends of link \(a.hex) queued") { $0 == values.count }
        return queued
    }

    @Test func peerThatNeverAcknowledgesKeepsItsShareWhileOtherLinksFlow() async throws {
        let (vc, central, serverA, serverB, a, b) = try await Self.twoLinksWithManualCompletion()
        let host = central.host
        // Each Write Command is an 8-byte ACL fragment (4-byte basic header + 4): 5 fit in 40 bytes.
        await host.setACLLimits(sendTimeout: .seconds(5), linkQueueBytes: 40)
        let att = L2CAPChannelID.att

        // Link A's peer never completes a packet: it gets its share (4 buffers / 2 links) and
        // the rest waits in its queue, up to its bound.
        let queued = try await Self.stall(host, a, queuing: 3...7)
        #expect(await host.aclLinkStatus(handle: a)! == (inFlight: 2, queuedBytes: 40, queuedPDUs: 5))
        await #expect(throws: LinkError.queueFull(peer: VC.peer.address, handle: a, channelID: att, bound: .bytes(queued: 40, limit: 40))) {
            try await host.sendL2CAP(handle: a, channelID: att, payload: Self.writeCommand(8))
        }

        // Link B's writes go through the buffers A cannot take.
        for i in 1...20 {
            try await host.sendL2CAP(handle: b, channelID: att, payload: Self.writeCommand(UInt8(i)))
            vc.completePackets(for: Self.peerB)
            #expect(await host.aclLinkStatus(handle: a)!.inFlight == 2, "A never holds more than its share")
        }
        await vc.settle()
        #expect(serverB.pdus == (1...20).map { Self.writeCommand(UInt8($0)) })
        #expect(serverA.pdus == [Self.writeCommand(1), Self.writeCommand(2)])
        #expect(vc.aclFlowControlViolations == 0)

        // A's queued sends fail typed once the send timeout passes; its queue is empty again.
        await vc.advance(by: .seconds(5))
        for task in queued {
            await #expect(throws: LinkError.sendTimeout(peer: VC.peer.address, handle: a, channelID: att, milliseconds: 5000)) { try await task.value }
        }
        #expect(await host.aclLinkStatus(handle: a)! == (inFlight: 2, queuedBytes: 0, queuedPDUs: 0))
        #expect(await host.failedOutboundPDUs == (timedOut: 5, queueFull: 1))
        #expect(LinkError.sendTimeout(peer: VC.peer.address, handle: a, channelID: att, milliseconds: 5000).description.contains("handle \(a.hex)"))

        // B still works; and once A's peer acknowledges, A works again.
        try await host.sendL2CAP(handle: b, channelID: att, payload: Self.writeCommand(21))
        vc.completePackets()
        try await host.sendL2CAP(handle: a, channelID: att, payload: Self.writeCommand(9))
        await vc.settle()
        #expect(serverA.pdus.last == Self.writeCommand(9) && serverB.pdus.last == Self.writeCommand(21))
    }

    @Test func queueOfSmallPDUsIsBoundedInNumberToo() async throws {
        let (vc, central, serverA, serverB, a, b) = try await Self.twoLinksWithManualCompletion()
        let host = central.host
        #expect(await host.aclLinkQueuePDULimit == 256, "the default")
        // Three 8-byte PDUs wait, far below the byte bound: the PDU bound refuses the fourth.
        await host.setACLLimits(sendTimeout: .seconds(5), linkQueueBytes: 64 * 1024, linkQueuePDUs: 3)
        let att = L2CAPChannelID.att

        // A's peer never completes a packet: 2 go out (its share), 3 wait.
        let queued = try await Self.stall(host, a, queuing: 3...5)
        #expect(await host.aclLinkStatus(handle: a)! == (inFlight: 2, queuedBytes: 24, queuedPDUs: 3))
        let full = LinkError.queueFull(peer: VC.peer.address, handle: a, channelID: att, bound: .pdus(queued: 3, limit: 3))
        await #expect(throws: full) { try await host.sendL2CAP(handle: a, channelID: att, payload: Self.writeCommand(6)) }
        #expect(full.description.contains("handle \(a.hex)") && full.description.contains("PDU bound: 3 of 3 PDUs waiting")
                && full.description.contains("setACLLimits"))
        // The host's own PDUs without a waiter obey the same bound: dropped and counted.
        await host.enqueueIfLinked(handle: a, channelID: att, payload: Self.writeCommand(7))
        #expect(await host.failedOutboundPDUs == (timedOut: 0, queueFull: 2))

        // B is not affected.
        for i in 1...5 {
            try await host.sendL2CAP(handle: b, channelID: att, payload: Self.writeCommand(UInt8(i)))
            vc.completePackets(for: Self.peerB)
        }
        await vc.settle()
        #expect(serverB.pdus == (1...5).map { Self.writeCommand(UInt8($0)) })

        // Once the queued sends time out, A queues again.
        await vc.advance(by: .seconds(5))
        for task in queued { _ = try? await task.value }
        #expect(await host.aclLinkStatus(handle: a)! == (inFlight: 2, queuedBytes: 0, queuedPDUs: 0))
        vc.completePackets()
        try await host.sendL2CAP(handle: a, channelID: att, payload: Self.writeCommand(8))
        await vc.settle()
        #expect(serverA.pdus == [Self.writeCommand(1), Self.writeCommand(2), Self.writeCommand(8)])
        #expect(vc.aclFlowControlViolations == 0)
    }

    @Test func linkThatConnectsWhileEveryOtherLinkIsStalledStillSends() async throws {
        let serverA = EchoATTServer(), serverB = EchoATTServer(), serverC = EchoATTServer()
        let peerC = LEAddress(BluetoothAddress(rawValue: 0xC0_77_88_99_AA_BB), type: .random)
        let (vc, central) = try await VC.stack({ o in o.aclPacketCount = 4; o.packetCompletion = .manual }, server: serverA)
        vc.addPeripheral(SimulatedPeripheral(address: Self.peerB, advertisingData: [0x02, 0x01, 0x06], attServer: serverB))
        vc.addPeripheral(SimulatedPeripheral(address: peerC, advertisingData: [0x02, 0x01, 0x06], attServer: serverC))
        _ = try await central.connect(VC.peer)
        _ = try await central.connect(Self.peerB)
        let host = central.host
        let a = try #require(vc.handle(of: VC.peer)), b = try #require(vc.handle(of: Self.peerB))
        await host.setACLLimits(sendTimeout: .seconds(5))
        let att = L2CAPChannelID.att

        // Neither peer ever completes a packet, and both links have more to send than the
        // 4 buffers hold: A takes its share of 2, B takes one and leaves the last buffer free.
        try await host.sendL2CAP(handle: a, channelID: att, payload: Self.writeCommand(1))
        try await host.sendL2CAP(handle: a, channelID: att, payload: Self.writeCommand(2))
        try await host.sendL2CAP(handle: b, channelID: att, payload: Self.writeCommand(1))
        let stalled = [a, a, b, b].enumerated().map { i, handle in
            Task { try await host.sendL2CAP(handle: handle, channelID: att, payload: Self.writeCommand(UInt8(10 + i))) }
        }
        try await host.sendWaiters.waitForCount("A's two and B's two sends queued (B leaves the last buffer free)") { $0 == 4 }
        #expect(await host.aclLinkStatus(handle: a)!.inFlight == 2)
        #expect(await host.aclLinkStatus(handle: b)!.inFlight == 1)

        // A third link connects: its first Write Command goes out on the buffer left free.
        _ = try await central.connect(peerC)
        let c = try #require(vc.handle(of: peerC))
        let first = vc.task { try await host.sendL2CAP(handle: c, channelID: att, payload: Self.writeCommand(1)) }
        await vc.settle()
        #expect(serverC.pdus == [Self.writeCommand(1)], "the new link found no controller buffer")
        #expect(await host.aclLinkStatus(handle: c)?.inFlight == 1)
        #expect(vc.aclFlowControlViolations == 0)

        // The stalled links' queued sends fail typed; C's send has its answer either way.
        await vc.advance(by: .seconds(5))
        for task in stalled { _ = try? await task.value }
        _ = try? await first.value
        #expect(serverA.pdus == [Self.writeCommand(1), Self.writeCommand(2)])
    }

    @Test func parameterUpdateFloodIsAnsweredOnceEachAndAppliedLatestOnly() async throws {
        let (vc, central) = try await VC.stack()
        _ = try await central.connect(VC.peer)
        let handle = try #require(vc.handle(of: VC.peer))
        let updates = { vc.commandsReceived.filter { $0.opcode.rawValue == 0x2013 } }
        // The controller takes each LE Connection Update with Command Status (status 0,
        // Num_HCI_Command_Packets 1, opcode 0x2013) and completes it only when the test says.
        vc.answer(HCIOpcode(rawValue: 0x2013), with: .events { _ in [HCIEventPacket(code: 0x0F, parameters: [0x00, 0x01, 0x13, 0x20])] })
        for i in 1...100 {
            let range = ConnectionParameterRange(minimumInterval: UInt16(0x0018 + i), maximumInterval: 0x0100, peripheralLatency: 0, supervisionTimeout: 0x0258)
            try vc.requestParameterUpdate(from: VC.peer, range, identifier: UInt8(i))
        }
        await vc.settle()
        // Every request has its Connection Parameter Update Response (code 0x13, length 2,
        // result 0x0000), with its own identifier, in order.
        let responses = vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.leSignaling }.map(\.payload)
        #expect(responses == (1...100).map { [0x13, UInt8($0), 0x02, 0x00, 0x00, 0x00] })
        // One LE Connection Update is under way; the other 99 collapse into one pending update.
        #expect(updates().count == 1)
        #expect(try HCICommand.LEConnectionUpdate(parameters: updates()[0].parameters).parameters.intervalMin == 0x0019)

        // LE Connection Update Complete (subevent 0x03): status 0, the handle, interval 0x0100,
        // latency 0, timeout 0x0258. The latest request (minimum interval 0x0018 + 100) goes next.
        let complete = HCIEventPacket(code: 0x3E, parameters: [0x03, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x00, 0x01, 0x00, 0x00, 0x58, 0x02])
        vc.inject(.event(complete))
        await vc.settle()
        #expect(updates().count == 2)
        #expect(try HCICommand.LEConnectionUpdate(parameters: updates()[1].parameters).parameters.intervalMin == 0x0018 + 100)
        vc.inject(.event(complete))
        await vc.settle()
        #expect(updates().count == 2, "nothing pending: no third command")
    }

    @Test func floodOfMalformedPacketsWritesOneLinePerInterval() async throws {
        let log = LogLines()
        let (vc, central) = try await VC.stack(central: { $0.logger = log.logger })
        _ = try await central.connect(VC.peer)
        // 1,000 signaling commands of one byte (too short for the command header, Vol 3,
        // Part A, 4) and 1,000 ACL packets for a handle that does not exist.
        for _ in 0..<1000 {
            try vc.sendL2CAP(from: VC.peer, channelID: L2CAPChannelID.leSignaling, payload: [0x12])
            vc.inject(.acl(ACLDataPacket(handle: 0x0ABC, boundary: .firstFlushable, data: [0x01, 0x00, 0x04, 0x00, 0x0A])))
        }
        await vc.settle()
        #expect(log.matching("malformed LE signaling command").count == 1)
        #expect(log.matching("unknown handle 0x0ABC").count == 1)
        // Each malformed command still gets its Command Reject (Vol 3, Part A, 4.1).
        #expect(vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.leSignaling }.count == 1000)

        await vc.advance(by: .seconds(10))
        try vc.sendL2CAP(from: VC.peer, channelID: L2CAPChannelID.leSignaling, payload: [0x12])
        await vc.settle()
        let lines = log.matching("malformed LE signaling command")
        #expect(lines.count == 2)
        #expect(lines.last?.contains("(999 similar lines suppressed") == true)
    }

    @Test func pduLongerThanItsChannelAcceptsIsDroppedUnbuffered() async throws {
        let log = LogLines()
        let (vc, central) = try await VC.stack({ $0.controllerToHostFragmentSize = 27 }, central: { $0.logger = log.logger })
        let connection = try await central.connect(VC.peer)
        let host = central.host
        let channel = try await connection.attChannel()
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        await channel.executor.hop { channel.setHandlers(receive: { continuation.yield($0) }, close: { _ in continuation.finish() }) }

        // An ATT PDU of 600 bytes, more than the 517 the link accepts, in 23 fragments.
        try vc.sendL2CAP(from: VC.peer, channelID: L2CAPChannelID.att, payload: [0x1B, 0x03, 0x00] + Array(repeating: 0xEE, count: 597))
        // A 40-byte signaling command (Connection Parameter Update Request code 0x12,
        // identifier 9), more than MTUsig 23: Command Reject, Signaling MTU exceeded (0x0001),
        // with MTUsig 23: 01 09 0400 0100 1700.
        try vc.sendL2CAP(from: VC.peer, channelID: L2CAPChannelID.leSignaling, payload: [0x12, 0x09, 0x24, 0x00] + Array(repeating: 0, count: 36))
        // Then a notification (Vol 3, Part F, 3.4.7.1) in one fragment: still delivered.
        try vc.sendL2CAP(from: VC.peer, channelID: L2CAPChannelID.att, payload: [0x1B, 0x03, 0x00, 0x2A])
        var received = stream.makeAsyncIterator()
        #expect(await received.next() == [0x1B, 0x03, 0x00, 0x2A])
        await vc.settle()
        #expect(await host.oversizedInboundPDUs == 2)
        #expect(await host.droppedInboundPDUs == 2, "the continuations of a refused PDU are discarded, not counted as more drops")
        #expect(vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.leSignaling }.map(\.payload) == [[0x01, 0x09, 0x04, 0x00, 0x01, 0x00, 0x17, 0x00]])
        #expect(log.matching("of 600 bytes, more than the 517 the channel accepts").count == 1)
        #expect(vc.commandsReceived.allSatisfy { $0.opcode.rawValue != 0x2013 })

        // Once the channel is bounded to 1024 bytes (what a bearer does with its ATT_MTU), a
        // 1,100-byte notification is refused, and reported with its first 8 octets, and a
        // 700-byte one delivered.
        let refused = Mutex<[([UInt8], Int)]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            channel.executor.queue.async {
                channel.limitInboundSDUs(to: 1024) { head, size in refused.withLock { $0.append((head, size)) } }
                done.resume()
            }
        }
        try vc.sendL2CAP(from: VC.peer, channelID: L2CAPChannelID.att, payload: [0x1B, 0x03, 0x00] + Array(repeating: 0x01, count: 1097))
        try vc.sendL2CAP(from: VC.peer, channelID: L2CAPChannelID.att, payload: [0x1B, 0x03, 0x00] + Array(repeating: 0x02, count: 697))
        #expect(await received.next() == [0x1B, 0x03, 0x00] + Array(repeating: 0x02, count: 697))
        #expect(await host.oversizedInboundPDUs == 3)
        #expect(refused.withLock { $0.map(\.0) } == [[0x1B, 0x03, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01]])
        #expect(refused.withLock { $0.map(\.1) } == [1100])
    }

    @Test func pdusBeforeTheBearerExistsAreBoundedInBytes() async throws {
        let (vc, central) = try await VC.stack()
        let connection = try await central.connect(VC.peer)
        // 40 notifications of 503 bytes (Vol 3, Part F, 3.4.7.1: 0x1B, handle 0x0003, 500
        // value bytes) before anyone reads the ATT channel: 16 fit in the 8 KiB held back.
        for i in 0..<40 {
            try vc.sendL2CAP(from: VC.peer, channelID: L2CAPChannelID.att, payload: [0x1B, 0x03, 0x00] + Array(repeating: UInt8(i), count: 500))
        }
        await vc.settle()
        let received = Mutex<[[UInt8]]>([])
        let channel = try await connection.attChannel()
        await channel.executor.hop { channel.setHandlers(receive: { sdu in received.withLock { $0.append(sdu) } }, close: { _ in }) }
        await vc.settle()
        #expect(received.withLock { $0.count } == 16)
        #expect(received.withLock { $0.map { $0[3] } } == (0..<16).map { UInt8($0) }, "the oldest are kept, in order")
    }

    @Test func linkOfTheKernelOnHCIRawIsLeftAlone() async throws {
        let server = EchoATTServer()
        let (vc, central) = try await VC.stack(central: { $0.resetController = false }, server: server)
        _ = try await central.connect(VC.peer)
        let host = central.host
        let ours = try #require(vc.handle(of: VC.peer))
        // Our link's setup (LE Read Remote Features, LE Set Data Length, LE Set PHY) runs in a
        // task of its own: wait for its commands, then for their answers.
        for opcode: UInt16 in [0x2016, 0x2022, 0x2032] { _ = try await vc.waitForCommand(HCIOpcode(rawValue: opcode)) }
        await vc.settle()
        let before = vc.commandsReceived.count
        // LE Connection Complete (subevent 0x01) that nobody here asked for: status 0, handle
        // 0x0099, role Peripheral (0x01), public peer 11:22:33:44:55:66, interval 0x0028,
        // latency 0, timeout 0x01F4, clock accuracy 0.
        vc.inject(.event(HCIEventPacket(code: 0x3E, parameters: [0x01, 0x00, 0x99, 0x00, 0x01, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00])))
        // Its peer then asks for a parameter update (code 0x12, id 1, length 8), sends a Pairing
        // Request (SMP 0x01: IO capability 0x03, no OOB, bonding, max key size 16, key
        // distribution 0x07/0x07) and an unknown signaling code 0x7F.
        let foreign: [[UInt8]] = [
            [0x0C, 0x00, 0x05, 0x00, 0x12, 0x01, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01],
            [0x07, 0x00, 0x06, 0x00, 0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07],
            [0x04, 0x00, 0x05, 0x00, 0x7F, 0x02, 0x00, 0x00],
        ]
        for data in foreign { vc.inject(.acl(ACLDataPacket(handle: 0x0099, boundary: .firstFlushable, data: data))) }
        await vc.settle()
        #expect(vc.aclReceived.allSatisfy { $0.handle != 0x0099 }, "nothing is sent on the kernel's link")
        #expect(vc.commandsReceived.count == before, "no Disconnect, no LE Connection Update: \(vc.commandsReceived.dropFirst(before).map { $0.opcode })")
        #expect(await host.hasLink(0x0099) == false)
        #expect(await host.isForeignLink(0x0099))

        // Our own link still works.
        try await host.sendL2CAP(handle: ours, channelID: L2CAPChannelID.att, payload: Self.writeCommand(7))
        await vc.settle()
        #expect(server.pdus.last == Self.writeCommand(7))

        // Disconnection Complete (0x05) for the kernel's link: status 0, handle 0x0099, reason 0x13.
        vc.inject(.event(HCIEventPacket(code: 0x05, parameters: [0x00, 0x99, 0x00, 0x13])))
        await vc.settle()
        #expect(await host.isForeignLink(0x0099) == false)
    }
}
