import Testing
import ATT
import BLECore
@testable import BLETestSupport
import GATTClient
import BLEWire

/// Notifications and indications a server sends on an enhanced ATT bearer (Core Spec 5.4
/// Vol 3, Part G, 5.3) reach the peripheral's subscriptions, made on the unenhanced bearer,
/// and each indication is confirmed on the bearer it came on. The test plays the peer's
/// enhanced channels on the virtual controller: K-frames with their SDU Length (Part A,
/// 3.4.2) around Handle Value Notification 0x1B, Multiple Handle Value Notification 0x23,
/// Handle Value Indication 0x1D and Confirmation 0x1E (Part F, 3.4.7.1-3.4.7.4).
@Suite(.timeLimit(.minutes(1)))
struct EnhancedBearerNotificationTests {
    /// Opens two enhanced bearers: our SCIDs 0x0040 and 0x0041, the peer's 0x0050 and 0x0051.
    static func openPool(_ bed: LabBed) async throws -> GATTBearerPool {
        let peripheral = bed.peripheral
        // The lab server has no Server Supported Features: forced.
        let opening = Task { try await peripheral.enhancedBearers(count: 2, mtu: 100, force: true) }
        try await bed.vc.waitUntil("enhanced Credit Based Connection Request") { vc in vc.signalingReceived.contains { $0.code == 0x17 } }
        let id = try #require(bed.vc.signalingReceived.first { $0.code == 0x17 }).identifier
        try bed.vc.sendSignaling(from: bed.peer, L2CAPSignalingCommand(identifier: id, body: .creditBasedConnectionResponse(
            mtu: 64, mps: 64, initialCredits: 5, result: 0, destinationCIDs: [0x0050, 0x0051])))
        let pool = try await opening.value
        #expect(pool.isEnhanced)
        return pool
    }

    /// Handle Value Confirmations the host sent on CID 0x0004.
    static func unenhancedConfirmations(_ bed: LabBed) -> Int {
        bed.vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.att && $0.payload == [0x1E] }.count
    }

    @Test func notificationsOnEnhancedBearersReachTheSubscription() async throws {
        let bed = try await LabBed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        let handle = try #require(await bed.server.valueHandle(of: Lab.uuid(6)))
        _ = try await Self.openPool(bed)
        let lo = UInt8(handle & 0xFF), hi = UInt8(handle >> 8)
        // SDU Length 7, Handle Value Notification: 0x1B, handle, value 01 00 00 00.
        try bed.vc.sendL2CAP(from: bed.peer, channelID: 0x0041, payload: [0x07, 0x00, 0x1B, lo, hi, 0x01, 0x00, 0x00, 0x00])
        // SDU Length 17, Multiple Handle Value Notification: 0x23, then handle, length 4,
        // value, twice.
        try bed.vc.sendL2CAP(from: bed.peer, channelID: 0x0040, payload: [0x11, 0x00, 0x23,
            lo, hi, 0x04, 0x00, 0x02, 0x00, 0x00, 0x00,
            lo, hi, 0x04, 0x00, 0x03, 0x00, 0x00, 0x00])
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [0x01, 0x00, 0x00, 0x00])
        #expect(try await values.next() == [0x02, 0x00, 0x00, 0x00])
        #expect(try await values.next() == [0x03, 0x00, 0x00, 0x00])
        // The unenhanced bearer still delivers to the same stream.
        #expect(await bed.server.notify(characteristic: Lab.uuid(6), value: [0x04, 0x00, 0x00, 0x00]) == 1)
        #expect(try await values.next() == [0x04, 0x00, 0x00, 0x00])
    }

    @Test func indicationOnAnEnhancedBearerIsConfirmedOnThatBearer() async throws {
        let bed = try await LabBed()
        let stream = try await bed.peripheral.subscribe(to: Lab.indicateCounter, indications: true)
        let handle = try #require(await bed.server.valueHandle(of: Lab.uuid(4)))
        _ = try await Self.openPool(bed)
        let confirmationsBefore = Self.unenhancedConfirmations(bed)
        // SDU Length 4, Handle Value Indication: 0x1D, handle, value 07.
        try bed.vc.sendL2CAP(from: bed.peer, channelID: 0x0041, payload: [0x04, 0x00, 0x1D, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x07])
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [0x07])
        // Handle Value Confirmation (0x1E) in a K-frame to the peer's CID of that bearer,
        // nothing on the other bearer nor on CID 0x0004.
        #expect(try await bed.vc.waitForL2CAP(channelID: 0x0051).payload == [0x01, 0x00, 0x1E])
        #expect(bed.vc.l2capReceived.filter { $0.channelID == 0x0050 }.isEmpty)
        #expect(Self.unenhancedConfirmations(bed) == confirmationsBefore)
    }
}
