import Testing
import Synchronization
import ATT
@testable import BLETestSupport
@testable import GATTClient
import BLEWire
import BLECore
import GATTServer

/// A request the peer refuses for lack of security (Insufficient Encryption 0x0F,
/// Insufficient Authentication 0x05, Encryption Key Size Too Short 0x0C; Vol 3, Part F,
/// 3.4.1.1) raises the link's security with the Peripheral's raiser and runs once more,
/// whatever the request: writes, CCCD writes, reliable writes. The ATT requests are asserted
/// as the server received them, byte for byte (Vol 3, Part F, 3.4.5.1 Write Request,
/// 3.4.6.1 Prepare Write Request, 3.4.6.3 Execute Write Request).
@Suite(.timeLimit(.minutes(1)))
struct SecurityRetryTests {
    /// Service FFF0 without the GAP and GATT services, so the handles are fixed: FFF1 value 3
    /// (write needs encryption), FFF2 value 5 and CCCD 6 (subscribing needs encryption), FFF3
    /// value 8 (needs a 16-octet key), FFF4 value 10 (write needs authentication), FFF5 value
    /// 12 (open).
    static let database = GATTDatabase(services: [.init(uuid: BluetoothUUID("FFF0")!, characteristics: [
        .init(uuid: BluetoothUUID("FFF1")!, properties: [.read, .write], permissions: [.read, .writeEncrypted], value: [0]),
        .init(uuid: BluetoothUUID("FFF2")!, properties: [.notify], permissions: [], cccdPermissions: [.read, .writeEncrypted]),
        .init(uuid: BluetoothUUID("FFF3")!, properties: [.read], permissions: [.read, .fullKeySize], value: [0x5A]),
        .init(uuid: BluetoothUUID("FFF4")!, properties: [.read, .write], permissions: [.read, .writeAuthenticated], value: [0]),
        .init(uuid: BluetoothUUID("FFF5")!, properties: [.read, .write], value: [0]),
    ])], includesGATTService: false)

    static let service = ServiceIdentifier(uuid: "FFF0")
    static func characteristic(_ uuid: String) -> CharacteristicIdentifier { CharacteristicIdentifier(uuid: BluetoothUUID(uuid)!, service: service) }

    /// The test bed, the requests its server received, and the levels the raiser was asked for.
    struct Bed {
        let bed: TestBed
        let recorder: GatedATTServer
        let raised = LevelLog()

        init() {
            let holder = RecorderHolder()
            bed = TestBed(SecurityRetryTests.database, wrap: { server in
                let r = GatedATTServer(server, queue: server.queue)
                holder.recorder = r
                return r
            })
            recorder = holder.recorder!
        }

        /// A raiser that encrypts the server's end of the link with a `keySize`-octet key
        /// (authenticated or not), as pairing would.
        func setEncryptingRaiser(authenticated: Bool = false, keySize: Int = 16) async {
            let link = bed.channel.serverLink, queue = bed.executor.queue, raised = self.raised
            await bed.peripheral.setSecurityRaiser { level, size in
                raised.append(level, size)
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    queue.async {
                        link.isEncrypted = true
                        link.encryptionKeySize = keySize
                        link.isAuthenticated = authenticated
                        c.resume()
                    }
                }
            }
        }

        /// Write, Prepare Write and Execute Write Requests (and Read Requests) received.
        func requests() -> [[UInt8]] {
            recorder.received.filter { [0x0A, 0x12, 0x16, 0x18].contains($0.first) }
        }
    }

    @Test func refusedWriteRaisesSecurityAndIsSentOnceMore() async throws {
        let t = Bed()
        await t.setEncryptingRaiser()
        try await t.bed.peripheral.write([0x01], to: Self.characteristic("FFF1"))
        // Write Request, handle 0x0003, value 01: refused (0x0F), then accepted.
        #expect(t.requests() == [[0x12, 0x03, 0x00, 0x01], [0x12, 0x03, 0x00, 0x01]])
        #expect(t.raised.all == [.encrypted])
        #expect(await t.bed.server.value(of: BluetoothUUID("FFF1")!) == [0x01])
    }

    @Test func subscribingToACCCDThatNeedsEncryptionPairsThenSubscribes() async throws {
        let t = Bed()
        await t.setEncryptingRaiser()
        let stream = try await t.bed.peripheral.subscribe(to: Self.characteristic("FFF2"))
        // Write Request to the CCCD (handle 0x0006), notifications on: refused, then accepted.
        #expect(t.requests() == [[0x12, 0x06, 0x00, 0x01, 0x00], [0x12, 0x06, 0x00, 0x01, 0x00]])
        #expect(t.raised.all == [.encrypted])
        #expect(await t.bed.server.notify(characteristic: BluetoothUUID("FFF2")!, value: [7]) == 1)
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [7])
    }

    /// Unsubscribing is a request like the others: a CCCD write the peer refuses (the link
    /// lost its encryption meanwhile) raises the link's security and is written again.
    @Test func refusedUnsubscribeRaisesSecurityAndClearsTheCCCD() async throws {
        let t = Bed()
        await t.setEncryptingRaiser()
        var streams = [try await t.bed.peripheral.subscribe(to: Self.characteristic("FFF2"))]
        let link = t.bed.channel.serverLink
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in t.bed.executor.queue.async { link.isEncrypted = false; c.resume() } }
        streams.removeAll()
        #expect(await t.bed.server.waitUntil("CCCD cleared") { $0.cccdValues(of: BluetoothUUID("FFF2")!) == [0] })
        // On (refused, accepted), then off (refused, accepted).
        #expect(t.requests() == [[0x12, 0x06, 0x00, 0x01, 0x00], [0x12, 0x06, 0x00, 0x01, 0x00],
                                 [0x12, 0x06, 0x00, 0x00, 0x00], [0x12, 0x06, 0x00, 0x00, 0x00]])
        #expect(t.raised.all == [.encrypted, .encrypted])
    }

    /// A control-point exchange on a server that needs encryption for both: the subscription
    /// raises the link's security once, the write then goes through as it is, and the
    /// subscription ends with the exchange.
    @Test func writeAndAwaitNotificationRaisesSecurityOnce() async throws {
        let t = Bed()
        await t.setEncryptingRaiser()
        let peripheral = t.bed.peripheral
        async let reply = peripheral.writeAndAwaitNotification([0x01], to: Self.characteristic("FFF1"), response: Self.characteristic("FFF2"))
        #expect(await t.bed.server.waitUntil("the write applied") { $0.writes.contains { $0.handle == 0x0003 } })
        #expect(await t.bed.server.notify(characteristic: BluetoothUUID("FFF2")!, value: [0x81]) == 1)
        #expect(try await reply == [0x81])
        // The exchange over, its subscription ends: the CCCD is written back to 0 (now encrypted, once).
        #expect(await t.bed.server.waitUntil("CCCD cleared") { $0.cccdValues(of: BluetoothUUID("FFF2")!) == [0] })
        #expect(t.requests() == [[0x12, 0x06, 0x00, 0x01, 0x00], [0x12, 0x06, 0x00, 0x01, 0x00], [0x12, 0x03, 0x00, 0x01],
                                 [0x12, 0x06, 0x00, 0x00, 0x00]])
        #expect(t.raised.all == [.encrypted])
    }

    @Test func encryptionKeySizeTooShortRaisesSecurityAndRetries() async throws {
        let t = Bed()
        t.bed.channel.serverLink.isEncrypted = true
        t.bed.channel.serverLink.encryptionKeySize = 7
        await t.setEncryptingRaiser()
        #expect(try await t.bed.peripheral.read(Self.characteristic("FFF3")) == [0x5A])
        // Read Request, handle 0x0008: Encryption Key Size Too Short (0x0C), then the value.
        #expect(t.requests() == [[0x0A, 0x08, 0x00], [0x0A, 0x08, 0x00]])
        // The same level, with a 16-octet key.
        #expect(t.raised.all == [.encrypted])
        #expect(t.raised.keySizes == [16])
    }

    /// Paired again for 16 octets, the key is still short (the peer could not give more): a
    /// typed error naming the attribute and the key size, not a loop.
    @Test func aKeyStillTooShortAfterPairingIsATypedError() async throws {
        let t = Bed()
        t.bed.channel.serverLink.isEncrypted = true
        t.bed.channel.serverLink.encryptionKeySize = 7
        await t.setEncryptingRaiser(keySize: 7)
        do {
            _ = try await t.bed.peripheral.read(Self.characteristic("FFF3"))
            Issue.record("the read went through")
        } catch {
            #expect(error == .securityNeeded(attribute: .encryptionKeySizeTooShort, needed: .encrypted, operation: .reading,
                                             target: .attribute(BluetoothUUID("FFF3")!, handle: 0x0008), peer: t.bed.peripheral.peerAddress,
                                             reason: .keySizeRefused(keySize: nil)))
            #expect(error.attErrorCode == .encryptionKeySizeTooShort)
            #expect(error.description == "Encryption Key Size Too Short (0x0C) reading FiRa Consortium (FFF3) at handle 0x0008 on F0:F1:F2:F3:F4:F5 again after pairing for a 16-octet key (the link's key: size unknown): the peer cannot give a longer key; nothing on this side can fix it")
        }
        #expect(t.requests() == [[0x0A, 0x08, 0x00], [0x0A, 0x08, 0x00]])
        #expect(t.raised.keySizes == [16])
    }

    /// Raised once, refused again: a typed error, not a loop of pairings.
    @Test func aSecondRefusalAfterRaisingIsATypedErrorNotALoop() async throws {
        let t = Bed()
        await t.setEncryptingRaiser(authenticated: false)
        let fff4 = BluetoothUUID("FFF4")!
        do {
            try await t.bed.peripheral.write([0x02], to: Self.characteristic("FFF4"))
            Issue.record("the write went through")
        } catch {
            #expect(error == .securityNeeded(attribute: .insufficientAuthentication, needed: .authenticated, operation: .writing,
                                             target: .attribute(fff4, handle: 0x000A), peer: t.bed.peripheral.peerAddress,
                                             reason: .refusedAgain(reached: .encrypted)))
            #expect(error.attErrorCode == .insufficientAuthentication)
            #expect(error.description == "Insufficient Authentication (0x05) writing FiRa Consortium (FFF4) at handle 0x000A on F0:F1:F2:F3:F4:F5 again after the link became encrypted: the peer needs more (encrypted, authenticated); pair with MITM protection (PairingOptions.mitm) or Secure Connections Only, then retry")
        }
        #expect(t.requests() == [[0x12, 0x0A, 0x00, 0x02], [0x12, 0x0A, 0x00, 0x02]])
        #expect(t.raised.all == [.encrypted])
    }

    /// Without a raiser (no agent, no bond: the app's policy is "tell me"): the peer's answer,
    /// typed, naming the peer, the characteristic and its handle, and saying to pair.
    @Test func withoutARaiserTheErrorSaysPairingIsNeeded() async throws {
        let t = Bed()
        let fff1 = BluetoothUUID("FFF1")!
        do {
            try await t.bed.peripheral.write([0x01], to: Self.characteristic("FFF1"))
            Issue.record("the write went through")
        } catch {
            #expect(error == .attribute(.insufficientEncryption, operation: .writing, target: .attribute(fff1, handle: 0x0003),
                                        peer: t.bed.peripheral.peerAddress))
            #expect(error.description == "Insufficient Encryption (0x0F) writing ICCE Digital Key (FFF1) at handle 0x0003 on F0:F1:F2:F3:F4:F5; pair or encrypt the link, then retry")
        }
        #expect(t.requests() == [[0x12, 0x03, 0x00, 0x01]])
    }

    /// A raiser that fails (the pairing failed): a typed error with its reason.
    @Test func aFailedRaiseIsATypedErrorWithTheReason() async throws {
        let t = Bed()
        struct PairingRefused: Error, CustomStringConvertible { var description: String { "Pairing Not Supported (0x05)" } }
        await t.bed.peripheral.setSecurityRaiser { _, _ in throw PairingRefused() }
        do {
            try await t.bed.peripheral.write([0x01], to: Self.characteristic("FFF1"))
            Issue.record("the write went through")
        } catch {
            #expect(error == .securityNeeded(attribute: .insufficientEncryption, needed: .encrypted, operation: .writing,
                                             target: .attribute(BluetoothUUID("FFF1")!, handle: 0x0003), peer: t.bed.peripheral.peerAddress,
                                             reason: .failed("Pairing Not Supported (0x05)")))
        }
        #expect(t.requests() == [[0x12, 0x03, 0x00, 0x01]])
    }

    /// A reliable write refused at its second Prepare Write: the procedure cancels what it
    /// queued (Execute Write, flags 0x00) before the link's security is raised, then runs
    /// again from the start; each value is written once.
    @Test func refusedReliableWriteCancelsTheQueueThenRunsAgain() async throws {
        let t = Bed()
        await t.setEncryptingRaiser()
        try await t.bed.peripheral.reliableWrite([(Self.characteristic("FFF5"), [0x01, 0x02]), (Self.characteristic("FFF1"), [0x03])])
        #expect(t.requests() == [
            [0x16, 0x0C, 0x00, 0x00, 0x00, 0x01, 0x02], [0x16, 0x03, 0x00, 0x00, 0x00, 0x03], [0x18, 0x00],
            [0x16, 0x0C, 0x00, 0x00, 0x00, 0x01, 0x02], [0x16, 0x03, 0x00, 0x00, 0x00, 0x03], [0x18, 0x01],
        ])
        #expect(await t.bed.server.appliedWrites().map(\.handle) == [0x000C, 0x0003])
        #expect(t.raised.all == [.encrypted])
    }

    /// Requests refused while the link's security is being raised wait for that raise: one
    /// pairing, and both requests go through.
    @Test func concurrentRefusalsShareOneRaise() async throws {
        let t = Bed()
        let link = t.bed.channel.serverLink, queue = t.bed.executor.queue, raised = t.raised, peripheral = t.bed.peripheral
        await peripheral.setSecurityRaiser { level, _ in
            raised.append(level)
            // The other write, refused too, waits for this raise before the link is encrypted.
            try await peripheral.securityRaise?.waitForCount("the second refused write waiting") { $0 == 1 }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in queue.async { link.isEncrypted = true; c.resume() } }
        }
        _ = try await peripheral.resolve(Self.characteristic("FFF1"))
        async let a: Void = peripheral.write([0x0A], to: Self.characteristic("FFF1"))
        async let b: Void = peripheral.write([0x0B], to: Self.characteristic("FFF1"))
        _ = try await (a, b)
        #expect(t.raised.all == [.encrypted])
        #expect(t.requests().count == 4)
        #expect(await t.bed.server.appliedWrites().map(\.handle) == [0x0003, 0x0003])
    }
}

/// The levels (and key sizes) a raiser was asked for, in order.
final class LevelLog: Sendable {
    private let levels = Mutex<[(SecurityLevel, Int?)]>([])
    func append(_ level: SecurityLevel, _ keySize: Int? = nil) { levels.withLock { $0.append((level, keySize)) } }
    var all: [SecurityLevel] { levels.withLock { $0.map(\.0) } }
    /// The key sizes asked for, where one was.
    var keySizes: [Int] { levels.withLock { $0.compactMap(\.1) } }
}

/// Captures the recording server a TestBed builds around its server.
final class RecorderHolder: @unchecked Sendable { // written once during TestBed.init, read afterwards by the same test
    var recorder: GatedATTServer?
}
