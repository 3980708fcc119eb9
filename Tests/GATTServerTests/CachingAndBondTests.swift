import Testing
import BLETestSupport
import GATTServer
import SMP
import BLEWire

/// Robust caching (Vol 3, Part G, 2.5.2.1), Client Supported Features (7.2), CCCDs per bond
/// (3.3.3.3) and signed writes (Part F, 3.4.5.4).
struct CachingAndBondTests {
    static let peer = LEAddress(BluetoothAddress("C4:00:00:00:00:02")!, type: .random)
    static let robust = GATTDatabase(services: ServerBed.database.services, robustCaching: true)

    /// Handles of `robust`: 0x0008 Client Supported Features, 0x000B the battery level, 0x0010
    /// the writable "abc".
    @Test func changeUnawareClientGetsDatabaseOutOfSync() async {
        let bed = ServerBed(Self.robust)
        #expect(bed.request("12 0800 01") == hex("13"))
        await bed.server.replaceDatabase(Self.robust)
        // The first request after the change: Database Out Of Sync (0x12); a command is ignored.
        #expect(bed.request("0A 0B00") == hex("01 0A 0000 12"))
        #expect(bed.send("52 1000 41").isEmpty)
        // The next request is answered: the client knows now.
        #expect(bed.request("0A 0B00") == hex("0B 64"))
        #expect(bed.request("0A 1000") == hex("0B 616263"))
    }

    @Test func readingTheDatabaseHashMakesTheClientChangeAware() async {
        let bed = ServerBed(Self.robust)
        #expect(bed.request("12 0800 01") == hex("13"))
        await bed.server.replaceDatabase(Self.robust)
        let hash = await bed.server.databaseHash()
        #expect(bed.request("08 0100 FFFF 2A2B") == [0x09, 0x12, 0x06, 0x00] + hash)
        #expect(bed.request("0A 0B00") == hex("0B 64"))
    }

    /// A client without robust caching is never refused.
    @Test func clientWithoutRobustCachingIsNotRefused() async {
        let bed = ServerBed(Self.robust)
        await bed.server.replaceDatabase(Self.robust)
        #expect(bed.request("0A 0B00") == hex("0B 64"))
    }

    /// A feature once enabled cannot be disabled: Value Not Allowed (0x13).
    @Test func clientSupportedFeaturesOnlyGrow() {
        let bed = ServerBed(Self.robust)
        #expect(bed.request("12 0800 05") == hex("13"))
        #expect(bed.request("12 0800 04") == hex("01 12 0800 13"))
        #expect(bed.request("0A 0800") == hex("0B 05"))
    }

    /// A bonded client's CCCDs come back on its next link; an unbonded client's do not.
    @Test func cccdsAreKeptPerBond() {
        let bed = ServerBed(link: CaptureLink(bondedPeer: Self.peer))
        #expect(bed.request("12 0A00 0100") == hex("13"))
        bed.disconnect(bed.link)
        let again = CaptureLink(bondedPeer: Self.peer)
        bed.connect(again)
        #expect(bed.request("0A 0A00", on: again) == hex("0B 0100"))

        let stranger = CaptureLink("C0:00:00:00:00:09")
        bed.connect(stranger)
        #expect(bed.request("12 0A00 0100", on: stranger) == hex("13"))
        bed.disconnect(stranger)
        let strangerAgain = CaptureLink("C0:00:00:00:00:09")
        bed.connect(strangerAgain)
        #expect(bed.request("0A 0A00", on: strangerAgain) == hex("0B 0000"))
    }

    /// A signed write with the peer's CSRK (the MAC of Vol 3, Part H, 2.4.5, whose algorithm
    /// SigningTests checks against Appendix D.1) is applied once; the same counter again is a
    /// replay and is dropped, as is a bad MAC or an unbonded link.
    @Test func signedWritesAreVerifiedAndReplaysRefused() async throws {
        let csrk: UInt128 = 0x2B7E_1516_28AE_D2A6_ABF7_1588_09CF_4F3C
        var bond = Bond(peer: Self.peer)
        bond.signatureKey = csrk
        let store = MemoryBondStore([bond])
        let db = GATTDatabase(services: [
            .init(uuid: BluetoothUUID(uuid16: 0xFFF0), characteristics: [
                .init(uuid: BluetoothUUID(uuid16: 0xFFF1), properties: [.read, .authenticatedSignedWrites], value: [0]),
            ]),
        ], includesGATTService: false)
        // 0x0003 the value.
        let bed = ServerBed(db, link: CaptureLink(bondedPeer: Self.peer))
        await bed.server.setSignedWriteVerifier(BondStoreSignatureVerifier(store: store))
        func signed(_ value: UInt8, counter: UInt32, tamper: Bool = false) throws -> [UInt8] {
            let message: [UInt8] = [0xD2, 0x03, 0x00, value]
            var mac = try SMPToolbox.signature(csrk: csrk, message: message, signCounter: counter)
            if tamper { mac ^= 1 }
            var pdu = message
            pdu.appendLE(counter); pdu.appendLE(mac)
            return pdu
        }
        func send(_ pdu: [UInt8], on link: CaptureLink) {
            bed.queue.sync { bed.server.receive(pdu, on: link) }
        }
        // The verifier runs in a task; its verdict is applied on the queue.
        send(try signed(0x41, counter: 5), on: bed.link)
        #expect(await bed.server.waitUntil("the write applied") { $0.table.attributes[2].value == [0x41] })
        #expect(store.bond(for: Self.peer)?.peerSignCounter == 5)
        send(try signed(0x42, counter: 5), on: bed.link)
        send(try signed(0x43, counter: 6, tamper: true), on: bed.link)
        let stranger = CaptureLink("C0:00:00:00:00:09")
        bed.connect(stranger)
        send(try signed(0x44, counter: 7), on: stranger)
        #expect(await bed.server.waitUntil("three dropped") { $0.dropped == 3 })
        #expect(bed.request("0A 0300") == hex("0B 41"))
        #expect(store.bond(for: Self.peer)?.peerSignCounter == 5)
    }
}
