import Dispatch
import Foundation
import Synchronization
import Testing
import BLETestSupport
@testable import BLECore
@testable import BLETransport
import BLEWire

private func fixturePath(_ relative: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent(relative).path
}

private let yeelock = "captures/real/cnrd__yeelock.btsnoop"

@Suite struct TransportMemoryTests {
    @Test func pairDeliversInOrderBothWays() async throws {
        let (host, controller) = MemoryTransport.pair()
        let hostLog = TransportEventLog(label: "host")
        let controllerLog = TransportEventLog(label: "controller")
        // Sent before the receiver starts: waits in its inbox.
        try host.start(on: hostLog.queue, handler: hostLog.handler)
        try hostLog.queue.sync { try host.send(try HCIPacket(h4: SpecPackets.reset)) }
        try controller.start(on: controllerLog.queue, handler: controllerLog.handler)

        let commands = (0..<500).map { HCIPacket.command(HCICommandPacket(opcode: HCIOpcode(rawValue: UInt16($0)), parameters: [UInt8(truncatingIfNeeded: $0)])) }
        let events = (0..<500).map { HCIPacket.event(HCIEventPacket(code: 0x0E, parameters: [1, UInt8(truncatingIfNeeded: $0), 0, 0])) }
        try hostLog.queue.sync { for c in commands { try host.send(c) } }
        try controllerLog.queue.sync { for e in events { try controller.send(e) } }

        let atController = await controllerLog.waitForPackets(501)
        let atHost = await hostLog.waitForPackets(500)
        #expect(atController == [try HCIPacket(h4: SpecPackets.reset)] + commands)
        #expect(atHost == events)
    }

    @Test func closingOneEndIsLostOnTheOther() async throws {
        let (host, controller) = MemoryTransport.pair(name: "vc")
        let hostLog = TransportEventLog(label: "host")
        let controllerLog = TransportEventLog(label: "controller")
        try host.start(on: hostLog.queue, handler: hostLog.handler)
        try controller.start(on: controllerLog.queue, handler: controllerLog.handler)
        try controllerLog.queue.sync {
            try controller.send(try HCIPacket(h4: SpecPackets.resetComplete))
            controller.close()
        }
        let events = await hostLog.wait { $0.closeEvent != nil }
        #expect(events.packets.map(\.h4) == [SpecPackets.resetComplete])
        #expect(events.closeEvent == .some(.lost(endpoint: "vc:host", reason: "the other end of the in-memory link closed")))
        #expect(throws: TransportError.closed(endpoint: "vc:host")) { try hostLog.queue.sync { try host.send(try HCIPacket(h4: SpecPackets.reset)) } }
        #expect(throws: TransportError.closed(endpoint: "vc:controller")) { try controllerLog.queue.sync { try controller.send(try HCIPacket(h4: SpecPackets.reset)) } }
        let controllerEvents = await controllerLog.wait(timeout: 0.1) { _ in false }
        #expect(controllerEvents.isEmpty)
    }

    /// A packet waiting in the inbox of an end that never started does not keep it alive.
    @Test func endsNeverStartedAreReleased() async throws {
        weak var weakHost: MemoryTransport?
        let controllerLog = TransportEventLog(label: "controller")
        do {
            let (host, controller) = MemoryTransport.pair()
            weakHost = host
            try controller.start(on: controllerLog.queue, handler: controllerLog.handler)
            try controllerLog.queue.sync { try controller.send(try HCIPacket(h4: SpecPackets.resetComplete)) }
        }
        #expect(weakHost == nil)
    }
}

@Suite struct TransportReplayTests {
    /// Free-running: every controller-to-host packet of the capture, in order, then `.closed(nil)`.
    @Test func freeRunningDeliversEveryReceivedPacket() async throws {
        let capture = try BTSnoopReader(bytes: fixtureBytes(yeelock))
        let expected = capture.records.filter { $0.direction == .received }.map(\.packet)
        #expect(expected.count > 0)
        let replay = try ReplayTransport(path: fixturePath(yeelock), options: .freeRunning)
        #expect(replay.receivedTotal == expected.count)
        let log = TransportEventLog()
        try replay.start(on: log.queue, handler: log.handler)
        let events = await log.wait { $0.closeEvent != nil }
        #expect(events.packets.count == expected.count)
        #expect(events.packets == expected)
        #expect(events.closeEvent == .some(nil))
        #expect(log.queue.sync { replay.delivered } == expected.count)
    }

    /// Script mode: nothing that follows the first command is delivered before the host sends
    /// it; sending it releases exactly the received packets up to the next host packet.
    @Test func scriptModeReleasesPacketsAfterTheirCommand() async throws {
        let capture = try BTSnoopReader(bytes: fixtureBytes(yeelock))
        let records = capture.records
        let firstSent = try #require(records.firstIndex { $0.direction == .sent })
        let secondSent = try #require(records[(firstSent + 1)...].firstIndex { $0.direction == .sent })
        let before = records[..<firstSent].map(\.packet)
        let released = records[(firstSent + 1)..<secondSent].map(\.packet)
        #expect(!released.isEmpty)

        let replay = try ReplayTransport(path: fixturePath(yeelock), options: .stayOpenWhenExhausted)
        let log = TransportEventLog()
        try replay.start(on: log.queue, handler: log.handler)
        let early = await log.wait(timeout: 0.3) { $0.packets.count > before.count }
        #expect(early.packets == before)

        let sentTotal = records.count { $0.direction == .sent }
        #expect(log.queue.sync { replay.expectedRemaining } == sentTotal)
        try log.queue.sync { try replay.send(records[firstSent].packet) }
        let after = await log.wait { $0.packets.count >= before.count + released.count }
        #expect(after.packets == before + released)
        // Nothing beyond the next host packet.
        let settled = await log.wait(timeout: 0.3) { $0.packets.count > before.count + released.count }
        #expect(settled.packets.count == before.count + released.count)
        #expect(log.queue.sync { replay.mismatches }.isEmpty)
        #expect(log.queue.sync { replay.expectedRemaining } == sentTotal - 1)
        #expect(log.queue.sync { replay.delivered } == before.count + released.count)

        // A wrong packet is recorded and play goes on.
        let wrong = HCIPacket.command(HCICommandPacket(opcode: HCIOpcode(rawValue: 0xFC00)))
        try log.queue.sync { try replay.send(wrong) }
        let mismatches = log.queue.sync { replay.mismatches }
        #expect(mismatches == [ReplayTransport.Mismatch(record: secondSent + 1, expected: records[secondSent].packet, sent: wrong)])
    }

    /// The whole script sent in order plays the whole capture and then closes.
    @Test func fullScriptPlaysEverythingThenCloses() async throws {
        let capture = try BTSnoopReader(bytes: fixtureBytes(yeelock))
        let replay = ReplayTransport(records: capture.records)
        let log = TransportEventLog()
        try replay.start(on: log.queue, handler: log.handler)
        try log.queue.sync { for r in capture.records where r.direction == .sent { try replay.send(r.packet) } }
        let events = await log.wait { $0.closeEvent != nil }
        #expect(events.packets == capture.records.filter { $0.direction == .received }.map(\.packet))
        #expect(events.closeEvent == .some(nil))
        #expect(log.queue.sync { replay.mismatches }.isEmpty)
        #expect(log.queue.sync { replay.expectedRemaining } == 0)
    }

    @Test func missingCaptureFile() {
        let error = #expect(throws: TransportError.self) { try TransportSpec.parse("replay:/nonexistent/x.btsnoop").open() }
        #expect(error == .unreachable(endpoint: "replay:/nonexistent/x.btsnoop", detail: "no capture file at /nonexistent/x.btsnoop"))
    }
}

@Suite struct TransportSnoopTests {
    static func tool(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Writes a session through the tee: commands out, events and ACL in.
    func teeSession(path: String) async throws -> [BTSnoopRecord] {
        let (host, controller) = MemoryTransport.pair()
        let tee = try SnoopingTransport(wrapping: host, path: path)
        let hostLog = TransportEventLog(label: "host")
        let controllerLog = TransportEventLog(label: "controller")
        try tee.start(on: hostLog.queue, handler: hostLog.handler)
        try controller.start(on: controllerLog.queue, handler: controllerLog.handler)
        // A real exchange: the first records of the yeelock capture, in their directions.
        let capture = try BTSnoopReader(bytes: fixtureBytes(yeelock))
        let session = Array(capture.records.prefix(120))
        // Each packet is awaited at the far end before the next goes, so the file keeps the capture's order.
        for (i, record) in session.enumerated() {
            let soFar = session[...i].count { $0.direction == record.direction }
            switch record.direction {
            case .sent:
                try hostLog.queue.sync { try tee.send(record.packet) }
                _ = await controllerLog.waitForPackets(soFar)
            case .received:
                try controllerLog.queue.sync { try controller.send(record.packet) }
                _ = await hostLog.waitForPackets(soFar)
            }
        }
        hostLog.queue.sync { tee.close() }
        return session
    }

    @Test func teeRecordsACLPacketsTheRawReceiverTookInStreamOrder() async throws {
        let path = "/tmp/ble-tee-\(getpid())-raw.btsnoop"
        defer { unlink(path) }
        let (host, controller) = try StreamTransport.socketPair(name: "tee")
        let tee = try SnoopingTransport(wrapping: host, path: path)
        let hostLog = TransportEventLog(label: "host")
        let controllerLog = TransportEventLog(label: "controller")
        final class Taken: Sendable { let count = Mutex(0) }
        let taken = Taken()
        tee.setACLReceiver { _ in taken.count.withLock { $0 += 1 }; return true }
        try tee.start(on: hostLog.queue, handler: hostLog.handler)
        try controller.start(on: controllerLog.queue, handler: controllerLog.handler)
        // Number Of Completed Packets (Vol 4, Part E, 7.7.19: one handle, 0x0040, 1 packet),
        // a Handle Value Notification on handle 0x0040 (ACL PB 0b10, L2CAP CID 0x0004, ATT
        // opcode 0x1B, attribute handle 0x0012, value 01 02), and the event again.
        let event = HCIPacket.event(HCIEventPacket(code: 0x13, parameters: [0x01, 0x40, 0x00, 0x01, 0x00]))
        let acl = HCIPacket.acl(ACLDataPacket(handle: 0x0040, boundary: .firstFlushable,
                                              data: [0x05, 0x00, 0x04, 0x00, 0x1B, 0x12, 0x00, 0x01, 0x02]))
        try controllerLog.queue.sync { for p in [event, acl, event] { try controller.send(p) } }
        // Only the events reach the handler: the receiver took the ACL packet.
        #expect(await hostLog.waitForPackets(2) == [event, event])
        hostLog.queue.sync { tee.close() }
        controllerLog.queue.sync { controller.close() }
        #expect(taken.count.withLock { $0 } == 1)
        let written = try BTSnoopReader(bytes: Array(Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(written.records.map(\.packet) == [event, acl, event])
        #expect(written.records.allSatisfy { $0.direction == .received })
    }

    @Test func teeRecordsBothDirections() async throws {
        let path = "/tmp/ble-tee-\(getpid())-a.btsnoop"
        defer { unlink(path) }
        let session = try await teeSession(path: path)
        let written = try BTSnoopReader(bytes: Array(Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(written.datalink == .h4)
        #expect(written.trailingError == nil)
        #expect(written.records.map(\.packet) == session.map(\.packet))
        #expect(written.records.map(\.direction) == session.map(\.direction))
    }

    @Test(.enabled(if: tool("/usr/bin/tshark"), "/usr/bin/tshark is not installed: capture not checked with tshark"))
    func teeCaptureOpensInTshark() async throws {
        let path = "/tmp/ble-tee-\(getpid())-b.btsnoop"
        defer { unlink(path) }
        let session = try await teeSession(path: path)
        let all = try await run("/usr/bin/tshark", ["-r", path])
        #expect(all.status == 0)
        #expect(all.output.split(separator: "\n").count == session.count)
        let malformed = try await run("/usr/bin/tshark", ["-r", path, "-Y", "_ws.malformed"])
        #expect(malformed.status == 0)
        #expect(malformed.output.isEmpty)
    }

    @Test(.enabled(if: tool("/usr/bin/btmon"), "/usr/bin/btmon is not installed: capture not checked with btmon"))
    func teeCaptureOpensInBtmon() async throws {
        let path = "/tmp/ble-tee-\(getpid())-c.btsnoop"
        defer { unlink(path) }
        _ = try await teeSession(path: path)
        let result = try await run("/usr/bin/btmon", ["-r", path])
        #expect(result.status == 0)
        #expect(!result.output.isEmpty)
        #expect(!result.output.lowercased().contains("malformed"))
        #expect(!result.output.lowercased().contains("invalid"))
    }

    /// Runs a tool (killed after 2 minutes); `output` is its standard output (tshark notes
    /// running as root on stderr).
    func run(_ tool: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = try ChildProcess(path: tool, arguments, stdout: .pipe)
        let exit = Task { await process.exitStatus(killingAfter: .seconds(120)) }
        let (chunks, feed) = AsyncStream<[UInt8]>.makeStream()
        PipeReader.start(process.pipe ?? -1) { feed.yield($0) } end: { feed.finish() }
        var output: [UInt8] = []
        for await chunk in chunks { output += chunk }
        return (await exit.value, String(decoding: output, as: UTF8.self))
    }
}
