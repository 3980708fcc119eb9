import Testing
import ATT
import BLECore
import BLETestSupport
import GATTClient

/// Enhanced ATT bearers through the virtual controller, with the test playing the peer's
/// L2CAP and ATT: the enhanced Credit Based Connection Request on PSM 0x0027 (Core Spec 5.4
/// Vol 3, Part A, 4.25; Part G, 5.3), ATT PDUs in K-frames with their SDU Length (Part A,
/// 3.4.2), ATT_MTU from the channel MTUs (Part F, 3.2.8), and the fallback when refused.
@Suite(.timeLimit(.minutes(1)))
struct EnhancedBearerTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_66), type: .random)

    static func stack() async throws -> (VirtualController, Peripheral) {
        let vc = VirtualController()
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06]))
        let central = Central(transport: vc.makeTransport(), options: vc.centralOptions())
        try await central.powerOn()
        let connection = try await central.connect(peer)
        return (vc, try await Peripheral(connection: connection))
    }

    static func signaling(_ vc: VirtualController, code: UInt8) async throws -> [UInt8] {
        try await vc.waitUntil("signaling code \(code)") { _ in vc.signalingReceived.contains { $0.code == code } }
        return vc.signalingReceived.first { $0.code == code }?.bytes ?? []
    }

    @Test func readsGoOutOnTheEnhancedBearersInTurn() async throws {
        let (vc, peripheral) = try await Self.stack()
        let opening = Task { try await peripheral.enhancedBearers(count: 2, mtu: 100) }
        let request = try await Self.signaling(vc, code: 0x17)
        // 4.25: SPSM 0x0027, MTU 100, MPS 247, 8 credits, SCIDs 0x0040 0x0041.
        #expect(request == [0x17, request[1], 0x0C, 0x00, 0x27, 0x00, 0x64, 0x00, 0xF7, 0x00, 0x08, 0x00, 0x40, 0x00, 0x41, 0x00])
        try vc.sendSignaling(from: Self.peer, L2CAPSignalingCommand(identifier: request[1], body: .creditBasedConnectionResponse(
            mtu: 64, mps: 64, initialCredits: 5, result: 0, destinationCIDs: [0x0050, 0x0051])))
        let pool = try await opening.value
        #expect(pool.isEnhanced)
        // ATT_MTU: the smaller channel MTU, without Exchange MTU.
        #expect(await pool.bearers[0].mtu == 64)
        let first = Task { try await pool.next().read(handle: 0x0003) }
        // Read Request (opcode 0x0A, handle 0x0003) in one K-frame: SDU Length 3 first.
        #expect(try await vc.waitForL2CAP(channelID: 0x0050).payload == [0x03, 0x00, 0x0A, 0x03, 0x00])
        let second = Task { try await pool.next().read(handle: 0x0005) }
        // The second read is in flight on the other bearer before the first is answered.
        #expect(try await vc.waitForL2CAP(channelID: 0x0051).payload == [0x03, 0x00, 0x0A, 0x05, 0x00])
        try vc.sendL2CAP(from: Self.peer, channelID: 0x0041, payload: [0x02, 0x00, 0x0B, 0x55])
        try vc.sendL2CAP(from: Self.peer, channelID: 0x0040, payload: [0x03, 0x00, 0x0B, 0x01, 0x02])
        #expect(try await first.value == [0x01, 0x02])
        #expect(try await second.value == [0x55])
        #expect(vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.att }.isEmpty)
    }

    @Test func refusedPSMLeavesTheUnenhancedBearer() async throws {
        let (vc, peripheral) = try await Self.stack()
        let opening = Task { try await peripheral.enhancedBearers(count: 3) }
        let request = try await Self.signaling(vc, code: 0x17)
        try vc.sendSignaling(from: Self.peer, L2CAPSignalingCommand(identifier: request[1], body: .creditBasedConnectionResponse(
            mtu: 0, mps: 0, initialCredits: 0, result: 0x0002, destinationCIDs: [0, 0, 0])))
        let pool = try await opening.value
        #expect(!pool.isEnhanced)
        let unenhanced = await peripheral.bearer
        #expect(pool.bearers.count == 1 && pool.bearers[0] === unenhanced)
        // A peer that does not know the command at all: Command Reject, the same fallback.
        let again = Task { try await peripheral.enhancedBearers(count: 1) }
        try await vc.waitUntil("a second request") { _ in vc.signalingReceived.filter { $0.code == 0x17 }.count == 2 }
        let id = vc.signalingReceived.filter { $0.code == 0x17 }[1].identifier
        try vc.sendSignaling(from: Self.peer, L2CAPSignalingCommand(identifier: id, body: .commandReject(reason: 0, data: [])))
        #expect(try await !again.value.isEnhanced)
    }
}
