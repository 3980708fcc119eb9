import Testing
import ATT
@testable import BLECore
@testable import BLETransport
@testable import BLETestSupport
import GATTClient
import BLEWire
import GATTServer

/// The Peripheral's own calls over enhanced ATT bearers (Core Spec 5.4 Vol 3, Part G, 5.3),
/// on the virtual controller with the lab `GATTServer` on CID 0x0004 and the test playing
/// the peer's enhanced channels: the Server / Client Supported Features handshake first
/// (Part G, 7.2 and 7.4), reads from two tasks in flight on two bearers at once (one request
/// per bearer, Part F, 3.3.2), the unenhanced bearer when none is open, and link loss
/// failing what is in flight on every bearer.
@Suite(.timeLimit(.minutes(1)))
struct EATTRequestTests {
    /// The lab services behind a Generic Attribute service that has Service Changed, Client
    /// Supported Features (read, write; 0x00) and Server Supported Features (`server`).
    static func database(serverFeatures server: UInt8) -> GATTDatabase {
        var db = GATTDatabase.lab()
        db.includesGATTService = false
        db.services.insert(GATTDatabase.Service(uuid: GATTAttributeType.genericAttributeService, characteristics: [
            GATTDatabase.Characteristic(uuid: GATTAttributeType.serviceChanged, properties: [.indicate], permissions: [], value: [0, 0, 0, 0]),
            GATTDatabase.Characteristic(uuid: GATTAttributeType.clientSupportedFeatures, properties: [.read, .write], value: [0x00]),
            GATTDatabase.Characteristic(uuid: GATTAttributeType.serverSupportedFeatures, properties: [.read], value: [server]),
        ]), at: 0)
        return db
    }

    /// Answers the enhanced Credit Based Connection Request (the `nth`, from 1) with the
    /// peer's CIDs `peerCIDs`, MTU and MPS 64, `credits` credits (Part A, 4.26); returns the
    /// request's source CIDs (this side's).
    @discardableResult
    static func accept(_ bed: LabBed, nth: Int = 1, peerCIDs: [UInt16], credits: UInt16 = 5) async throws -> [UInt16] {
        try await bed.vc.waitUntil("enhanced Credit Based Connection Request #\(nth)") { vc in
            vc.signalingReceived.filter { $0.code == 0x17 }.count >= nth
        }
        let request = bed.vc.signalingReceived.filter { $0.code == 0x17 }[nth - 1]
        guard case .creditBasedConnectionRequest(let psm, _, _, _, let sourceCIDs) = request.body else { return [] }
        #expect(psm == 0x0027)
        try bed.vc.sendSignaling(from: bed.peer, L2CAPSignalingCommand(identifier: request.identifier, body: .creditBasedConnectionResponse(
            mtu: 64, mps: 64, initialCredits: credits, result: 0, destinationCIDs: peerCIDs)))
        return sourceCIDs
    }

    /// Discovers the lab service on the unenhanced bearer, then opens one enhanced bearer per
    /// CID of `peerCIDs` (forced: the lab server has no Server Supported Features), accepted
    /// with `credits` credits.
    @discardableResult
    static func openForced(_ bed: LabBed, peerCIDs: [UInt16], credits: UInt16 = 5) async throws -> GATTBearerPool {
        let peripheral = bed.peripheral
        _ = try await peripheral.characteristics(of: Lab.service)
        let opening = Task { try await peripheral.enhancedBearers(count: peerCIDs.count, mtu: 100, force: true) }
        try await accept(bed, peerCIDs: peerCIDs, credits: credits)
        return try await opening.value
    }

    /// Read Request (0x0A, Part F, 3.4.4.3) for `handle` in a K-frame with its SDU Length 3.
    static func readRequestKFrame(_ handle: UInt16) -> [UInt8] {
        [0x03, 0x00, 0x0A, UInt8(handle & 0xFF), UInt8(handle >> 8)]
    }

    @Test func featuresHandshakeThenReadsInParallelOnTwoBearers() async throws {
        let bed = try await LabBed(.init(database: Self.database(serverFeatures: 0x01)))
        let peripheral = bed.peripheral
        // Discovered on the unenhanced bearer first, so the reads below need no discovery.
        _ = try await peripheral.characteristics(of: Lab.service)
        let clientFeatures = try #require(await bed.server.valueHandle(of: GATTAttributeType.clientSupportedFeatures))
        let opening = Task { try await peripheral.enhancedBearers(count: 2, mtu: 100) }
        try await Self.accept(bed, peerCIDs: [0x0050, 0x0051])
        let pool = try await opening.value
        #expect(pool.isEnhanced && pool.bearers.count == 2)
        #expect(await peripheral.serverFeatures == [.enhancedATTBearer])

        // On CID 0x0004, before the channels: Read By Type Request (0x08, Part F, 3.4.4.1)
        // for 0x2B3A over 0x0001-0xFFFF, then the same for 0x2B29, then Write Request (0x12)
        // setting Enhanced ATT Bearer (bit 1) and Multiple Handle Value Notifications (bit 2).
        let frames = bed.vc.l2capReceived
        let att = frames.filter { $0.channelID == L2CAPChannelID.att }.map(\.payload)
        let serverRead: [UInt8] = [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x3A, 0x2B]
        let clientRead: [UInt8] = [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x29, 0x2B]
        let write: [UInt8] = [0x12, UInt8(clientFeatures & 0xFF), UInt8(clientFeatures >> 8), 0x06]
        let i = try #require(att.firstIndex(of: serverRead)), j = try #require(att.firstIndex(of: clientRead))
        let k = try #require(att.firstIndex(of: write))
        #expect(i < j && j < k)
        let writeFrame = try #require(frames.firstIndex { $0.channelID == L2CAPChannelID.att && $0.payload == write })
        let request = try #require(frames.firstIndex { $0.channelID == 0x0005 && $0.payload.first == 0x17 })
        #expect(writeFrame < request)
        #expect(await bed.server.value(of: GATTAttributeType.clientSupportedFeatures) == [0x06])

        // Two reads from two tasks: each goes out on its own bearer before either is answered.
        let pattern = try #require(await bed.server.valueHandle(of: Lab.uuid(2)))
        let scratch = try #require(await bed.server.valueHandle(of: Lab.uuid(3)))
        let a = Task { try await peripheral.read(Lab.pattern) }
        let b = Task { try await peripheral.read(Lab.scratch) }
        let first = try await bed.vc.waitForL2CAP(channelID: 0x0050).payload
        let second = try await bed.vc.waitForL2CAP(channelID: 0x0051).payload
        #expect(Set([first, second]) == Set([Self.readRequestKFrame(pattern), Self.readRequestKFrame(scratch)]))
        // Read Responses (0x0B) on each bearer, short values: no Read Blob follows.
        for (cid, frame) in [(UInt16(0x0040), first), (0x0041, second)] {
            let value: UInt8 = frame == Self.readRequestKFrame(pattern) ? 0xAA : 0xBB
            try bed.vc.sendL2CAP(from: bed.peer, channelID: cid, payload: [0x02, 0x00, 0x0B, value])
        }
        #expect(try await a.value == [0xAA])
        #expect(try await b.value == [0xBB])
        #expect(bed.vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.att && $0.payload.first == 0x0A }.isEmpty)
    }

    @Test func serverWithoutEATTGetsNoChannelRequestAndCallsStayOnTheUnenhancedBearer() async throws {
        let bed = try await LabBed(.init(database: Self.database(serverFeatures: 0x00)))
        let pool = try await bed.peripheral.enhancedBearers(count: 3)
        #expect(!pool.isEnhanced)
        let unenhanced = await bed.peripheral.bearer
        #expect(pool.bearers.count == 1 && pool.bearers[0] === unenhanced)
        #expect(await bed.peripheral.serverFeatures == [])
        await bed.vc.settle()
        #expect(!bed.vc.signalingReceived.contains { $0.code == 0x17 })
        // Client Supported Features is left alone.
        #expect(!bed.attPDUs(on: try #require(await bed.link.handle)).contains { $0.first == 0x12 })
        #expect(try await bed.peripheral.read(Lab.scratch) == [UInt8](repeating: 0, count: 512))
    }

    @Test func linkLossFailsTheReadsInFlightOnEveryBearer() async throws {
        let bed = try await LabBed()
        let peripheral = bed.peripheral
        #expect(try await Self.openForced(bed, peerCIDs: [0x0050, 0x0051]).isEnhanced)
        let a = Task { try await peripheral.read(Lab.pattern) }
        let b = Task { try await peripheral.read(Lab.scratch) }
        _ = try await bed.vc.waitForL2CAP(channelID: 0x0050)
        _ = try await bed.vc.waitForL2CAP(channelID: 0x0051)
        try bed.vc.disconnect(bed.peer, reason: .connectionTimeout)
        for task in [a, b] {
            await #expect {
                _ = try await task.value
            } throws: { error in
                guard case GATTError.disconnected(let peer, _) = error else { return false }
                return peer == LabBed.peer.address
            }
        }
        #expect(await !peripheral.bearerPool.isEnhanced)
    }

    @Test func peerClosingOneBearerLeavesTheOtherThenTheUnenhancedOne() async throws {
        let bed = try await LabBed()
        let peripheral = bed.peripheral
        try await Self.openForced(bed, peerCIDs: [0x0050, 0x0051])
        let pattern = try #require(await bed.server.valueHandle(of: Lab.uuid(2)))
        // A read in flight on the first bearer (the least busy, first of equals) when the
        // peer closes it: L2CAP_DISCONNECTION_REQ (Part A, 4.6) for our CID 0x0040 (its 0x0050).
        let closed = Task { try await peripheral.read(Lab.pattern) }
        #expect(try await bed.vc.waitForL2CAP(channelID: 0x0050).payload == Self.readRequestKFrame(pattern))
        try bed.vc.sendSignaling(from: bed.peer, L2CAPSignalingCommand(identifier: 0x21, body: .disconnectionRequest(
            destinationCID: 0x0040, sourceCID: 0x0050)))
        await #expect(throws: GATTError.enhancedBearers(.closedByPeer(peer: "\(LabBed.peer.address)", cid: 0x0040), peer: LabBed.peer.address)) {
            _ = try await closed.value
        }
        try await bed.vc.waitUntil("Disconnection Response") { vc in vc.signalingReceived.contains { $0.code == 0x07 } }
        await bed.vc.settle()
        #expect(await peripheral.bearerPool.bearers.count == 1)
        let a = Task { try await peripheral.read(Lab.pattern) }
        #expect(try await bed.vc.waitForL2CAP(channelID: 0x0051).payload == Self.readRequestKFrame(pattern))
        try bed.vc.sendL2CAP(from: bed.peer, channelID: 0x0041, payload: [0x02, 0x00, 0x0B, 0x01])
        #expect(try await a.value == [0x01])
        try bed.vc.sendSignaling(from: bed.peer, L2CAPSignalingCommand(identifier: 0x22, body: .disconnectionRequest(
            destinationCID: 0x0041, sourceCID: 0x0051)))
        try await bed.vc.waitUntil("second Disconnection Response") { vc in vc.signalingReceived.filter { $0.code == 0x07 }.count == 2 }
        await bed.vc.settle()
        #expect(await !peripheral.bearerPool.isEnhanced)
        // Back on the unenhanced bearer, answered by the lab server.
        #expect(try await peripheral.read(Lab.scratch) == [UInt8](repeating: 0, count: 512))
    }

    /// No response within the ATT transaction timeout (30 s, Part F, 3.3.3): the read fails
    /// with `.timeout`, and that bearer is closed (L2CAP_DISCONNECTION_REQ, Part A, 4.6, for
    /// its CIDs) while the other stays in use.
    @Test func transactionTimeoutClosesThatBearerOnly() async throws {
        let bed = try await LabBed()
        let peripheral = bed.peripheral
        try await Self.openForced(bed, peerCIDs: [0x0050, 0x0051])
        let pattern = try #require(await bed.server.valueHandle(of: Lab.uuid(2)))
        let silent = bed.vc.task { try await peripheral.read(Lab.pattern) }
        #expect(try await bed.vc.waitForL2CAP(channelID: 0x0050).payload == Self.readRequestKFrame(pattern))
        await bed.vc.advance(by: .seconds(30))
        await #expect {
            _ = try await silent.value
        } throws: { error in
            guard case GATTError.timeout = error else { return false }
            return true
        }
        // Disconnection Request: Destination CID 0x0050 (the peer's), Source CID 0x0040.
        try await bed.vc.waitUntil("Disconnection Request") { vc in
            vc.signalingReceived.contains { $0.body == .disconnectionRequest(destinationCID: 0x0050, sourceCID: 0x0040) }
        }
        #expect(await peripheral.bearerPool.bearers.count == 1)
        let next = Task { try await peripheral.read(Lab.pattern) }
        #expect(try await bed.vc.waitForL2CAP(channelID: 0x0051).payload == Self.readRequestKFrame(pattern))
        try bed.vc.sendL2CAP(from: bed.peer, channelID: 0x0041, payload: [0x02, 0x00, 0x0B, 0x07])
        #expect(try await next.value == [0x07])
    }

    @Test func restoredLinkReopensTheBearersWhenAskedAndWritesTheCCCDOnOne() async throws {
        let bed = try await LabBed(policy: ResubscribeAfterReconnectTests.always)
        let peripheral = bed.peripheral
        var events = await bed.link.events().makeAsyncIterator()
        let cccd = try await bed.cccdHandle(Lab.notifyCounter)
        let stream = try await peripheral.subscribe(to: Lab.notifyCounter)
        let opening = Task { try await peripheral.enhancedBearers(count: 1, mtu: 100, force: true, reopenAfterRestore: true) }
        try await Self.accept(bed, peerCIDs: [0x0050])
        #expect(try await opening.value.isEnhanced)

        // Dropped (supervision timeout): the bearer goes with the link; restored after the backoff.
        try bed.vc.disconnect(bed.peer, reason: .connectionTimeout)
        #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTimeout, willReconnect: true))
        #expect(await events.nextLifecycle() == .reconnecting(attempt: 1, delay: ResubscribeAfterReconnectTests.backoff))
        #expect(await !peripheral.bearerPool.isEnhanced)
        await bed.vc.advance(by: ResubscribeAfterReconnectTests.backoff)
        #expect(await events.nextLifecycle() == .connecting(attempt: 2))
        guard case .connected? = await events.nextLifecycle() else {
            Issue.record("the link was not restored")
            return
        }
        // A second request on the new link; once open, the CCCD is written again on the new
        // enhanced bearer: Write Request 0x12, CCCD handle, 0x0001, in a K-frame (SDU Length 5).
        let ours = try await Self.accept(bed, nth: 2, peerCIDs: [0x0060])
        let write = try await bed.vc.waitForL2CAP(channelID: 0x0060).payload
        #expect(write == [0x05, 0x00, 0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), 0x01, 0x00])
        // Write Response (0x13) on that bearer.
        try bed.vc.sendL2CAP(from: bed.peer, channelID: try #require(ours.first), payload: [0x01, 0x00, 0x13])
        #expect(await peripheral.bearerPool.isEnhanced)
        _ = stream
    }
}
