import Foundation
import Testing
import BLETestSupport
import BLEWire
import BLETransport
import BLECore

/// Replays recorded sessions through the whole stack: the capture's controller-to-host half
/// is fed in, the host-to-controller half is the script the stack must follow.
@Suite struct ReplayTests {
    @Test(.timeLimit(.minutes(1)))
    func heartRateSessionReplaysExactly() async throws {
        let path = HeartRateSession.capturePath("heart-rate-session.btsnoop")
        let transport = try ReplayTransport(path: path)
        let sentLog = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString).btsnoop").path
        let central = Central(transport: try SnoopingTransport(wrapping: transport, path: sentLog))
        try await central.powerOn()
        let result = try await HeartRateSession.run(central)

        // What the stack saw, against tshark's decoding of the same capture:
        //   tshark -r heart-rate-session.btsnoop -Y "btatt.opcode == 0x1b" \
        //     -T fields -e btatt.heart_rate_measurement.value.8 -e btatt.heart_rate_measurement.value.16
        #expect(result.beatsPerMinute == [60, 63, 66, 69, 72, 75, 78, 81, 84, 87])
        // tshark -Y "bthci_evt.code == 0x05" -T fields -e bthci_evt.reason -> 0x13
        #expect(result.disconnectReason == .remoteUserTerminatedConnection)
        // The scenario (Fixtures/peers/scenarios/heart-rate.json): GAP, GATT, 180D, 180F, 180A;
        // Body Sensor Location 0x01; manufacturer "Polar Electro Oy (sim)".
        #expect(result.services == [0x1800, 0x1801, 0x180D, 0x180F, 0x180A].map { BluetoothUUID(uuid16: $0) })
        #expect(result.bodySensorLocation == .chest)

        let remaining = central.executor.queue.sync { transport.expectedRemaining }
        #expect(remaining == 0)
        await central.close()
        try expectSameTraffic(sentLog: sentLog, capture: path)
    }

    @Test(.timeLimit(.minutes(1)))
    func labSessionReplaysExactly() async throws {
        let path = HeartRateSession.capturePath("lab-session.btsnoop")
        let transport = try ReplayTransport(path: path)
        let sentLog = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString).btsnoop").path
        let central = Central(transport: try SnoopingTransport(wrapping: transport, path: sentLog))
        try await central.powerOn()
        let result = try await LabSession.run(central)
        // Expected from the scenario (Fixtures/peers/scenarios/lab.json): the lab device at
        // F0:5E:B1:00:00:02, a 600-byte value whose byte i is i & 0xFF, the written value read back.
        #expect(result.found == LEAddress("F0:5E:B1:00:00:02", type: .random))
        #expect(result.longValue == (0..<600).map { UInt8($0 & 0xFF) })
        #expect(result.writtenBack == LabSession.written)
        #expect(result.indications == 3)
        let remaining = central.executor.queue.sync { transport.expectedRemaining }
        #expect(remaining == 0)
        await central.close()
        try expectSameTraffic(sentLog: sentLog, capture: path)
    }
}

/// What the stack sent equals the capture's host-to-controller half, packet for packet, within
/// each of the host's two flow-controlled queues: commands (HCI command credits) and ACL data
/// (controller buffer credits). The interleaving of the two queues depends on when credits
/// come back, so it is not compared.
func expectSameTraffic(sentLog: String, capture: String) throws {
    defer { try? FileManager.default.removeItem(atPath: sentLog) }
    func sent(_ path: String) throws -> (commands: [HCIPacket], acl: [HCIPacket]) {
        let records = try BTSnoopReader(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path)))).records.filter { $0.direction == .sent }
        return (records.map(\.packet).filter { $0.type == .command }, records.map(\.packet).filter { $0.type == .acl })
    }
    let ours = try sent(sentLog), recorded = try sent(capture)
    #expect(ours.commands == recorded.commands)
    #expect(ours.acl == recorded.acl)
    #expect(!recorded.commands.isEmpty && !recorded.acl.isEmpty)
}
