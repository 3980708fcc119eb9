import Testing
import ATT
import BLECore
@testable import BLETestSupport
import GATTClient
import BLEWire

/// Enhanced ATT bearers through the virtual controller, with the test playing the peer's
/// L2CAP and ATT: the enhanced Credit Based Connection Request on PSM 0x0027 (Core Spec 5.4
/// Vol 3, Part A, 4.25; Part G, 5.3), ATT PDUs in K-frames with their SDU Length (Part A,
/// 3.4.2), ATT_MTU from the channel MTUs (Part F, 3.2.8), and the fallback when refused.
@Suite(.timeLimit(.minutes(1)))
struct EnhancedBearerTests {
    static func signaling(_ vc: VirtualController, code: UInt8) async throws -> [UInt8] {
        try await vc.waitUntil("signaling code \(code)") { _ in vc.signalingReceived.contains { $0.code == code } }
        return vc.signalingReceived.first { $0.code == code }?.bytes ?? []
    }

    @Test func requestBytesAndTheATTMTUOfTheChannels() async throws {
        // The lab server has no Server Supported Features: forced.
        let bed = try await LabBed()
        let opening = Task { try await bed.peripheral.enhancedBearers(count: 2, mtu: 100, force: true) }
        let request = try await Self.signaling(bed.vc, code: 0x17)
        // 4.25: SPSM 0x0027, MTU 100, MPS 247, 8 credits, SCIDs 0x0040 0x0041.
        #expect(request == [0x17, request[1], 0x0C, 0x00, 0x27, 0x00, 0x64, 0x00, 0xF7, 0x00, 0x08, 0x00, 0x40, 0x00, 0x41, 0x00])
        try bed.vc.sendSignaling(from: bed.peer, L2CAPSignalingCommand(identifier: request[1], body: .creditBasedConnectionResponse(
            mtu: 64, mps: 64, initialCredits: 5, result: 0, destinationCIDs: [0x0050, 0x0051])))
        let pool = try await opening.value
        #expect(pool.isEnhanced && pool.bearers.count == 2)
        // ATT_MTU: the smaller channel MTU, without Exchange MTU.
        #expect(await pool.bearers[0].mtu == 64)
        #expect(await pool.bearers[1].mtu == 64)
        // Write Command payloads follow it: ATT_MTU - 3 over the enhanced bearers.
        #expect(try await bed.peripheral.maximumWriteValueLength(for: .withoutResponse) == 61)
    }

    @Test func refusedPSMLeavesTheUnenhancedBearer() async throws {
        let bed = try await LabBed()
        let peripheral = bed.peripheral
        let opening = Task { try await peripheral.enhancedBearers(count: 3, force: true) }
        let request = try await Self.signaling(bed.vc, code: 0x17)
        try bed.vc.sendSignaling(from: bed.peer, L2CAPSignalingCommand(identifier: request[1], body: .creditBasedConnectionResponse(
            mtu: 0, mps: 0, initialCredits: 0, result: 0x0002, destinationCIDs: [0, 0, 0])))
        let pool = try await opening.value
        #expect(!pool.isEnhanced)
        let unenhanced = await peripheral.bearer
        #expect(pool.bearers.count == 1 && pool.bearers[0] === unenhanced)
        // A peer that does not know the command at all: Command Reject, the same fallback.
        let again = Task { try await peripheral.enhancedBearers(count: 1, force: true) }
        try await bed.vc.waitUntil("a second request") { vc in vc.signalingReceived.filter { $0.code == 0x17 }.count == 2 }
        let id = bed.vc.signalingReceived.filter { $0.code == 0x17 }[1].identifier
        try bed.vc.sendSignaling(from: bed.peer, L2CAPSignalingCommand(identifier: id, body: .commandReject(reason: 0, data: [])))
        #expect(try await !again.value.isEnhanced)
    }
}
