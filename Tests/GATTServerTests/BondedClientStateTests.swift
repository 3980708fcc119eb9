import Synchronization
import Testing
import BLETestSupport
import GATTServer
import SMP
import BLEWire

/// A bonded client's Client Supported Features and change awareness persist across links
/// (Vol 3, Part G, 2.5.2.1 and 7.2), in the server while it runs and through the bond store
/// across a restart, beside its CCCDs (3.3.3.3). Robust caching: a change-unaware client's
/// first request gets Database Out Of Sync (0x12); reading the Database Hash makes it aware.
struct BondedClientStateTests {
    static let peer = LEAddress(BluetoothAddress("C4:00:00:00:00:02")!, type: .random)
    /// Handles as in CachingAndBondTests: 0x0008 Client Supported Features, 0x000B the level.
    static let robust = CachingAndBondTests.robust

    @Test func aChangeUnawareBondedClientIsOutOfSyncOnItsNextLink() async {
        let bed = ServerBed(Self.robust, link: CaptureLink(bondedPeer: Self.peer))
        #expect(bed.request("12 0800 01") == hex("13"))
        await bed.server.replaceDatabase(Self.robust)
        bed.disconnect(bed.link)
        let again = CaptureLink(bondedPeer: Self.peer)
        bed.connect(again)
        #expect(bed.request("0A 0800", on: again) == hex("01 0A 0000 12"))
        #expect(bed.request("0A 0800", on: again) == hex("0B 01"))
        // Aware now, on this link and the next.
        bed.disconnect(again)
        let third = CaptureLink(bondedPeer: Self.peer)
        bed.connect(third)
        #expect(bed.request("0A 0B00", on: third) == hex("0B 64"))
    }

    /// The store keeps the features and the hash the client knows; a server made again on the
    /// same store (a restart) starts from them.
    @Test func featuresAndAwarenessComeBackFromTheStoreAfterARestart() async throws {
        let store = WatchedBondStore([Bond(peer: Self.peer)])
        func restart() -> ServerBed {
            let bed = ServerBed(Self.robust, link: CaptureLink(bondedPeer: Self.peer, store: store))
            bed.queue.sync { bed.server.restoreBondState(bed.link, stored: store.bond(for: Self.peer)) }
            return bed
        }
        let first = restart()
        let hash = await first.server.databaseHash()
        let known = UInt128(littleEndianBytes: hash)
        // The first link: the hash it is aware of is saved, then its features.
        #expect(await store.nextSave()?.clientDatabaseHash == known)
        #expect(first.request("12 0800 01") == hex("13"))
        let saved = try #require(await store.nextSave())
        #expect(saved.clientSupportedFeatures == 0x01)
        #expect(saved.clientDatabaseHash == known)
        // The database changes: the connected client's bond is change-unaware (hash 0).
        await first.server.replaceDatabase(Self.robust)
        #expect(await store.nextSave()?.clientDatabaseHash == 0)

        // After a restart the client is still change-unaware: Database Out Of Sync.
        let second = restart()
        #expect(second.request("0A 0B00") == hex("01 0A 0000 12"))
        // Again, and this time it reads the Database Hash (Read By Type of 0x2B2A) first:
        // answered, and the hash it knows now is saved.
        let third = restart()
        #expect(third.request("08 0100 FFFF 2A2B") == [0x09, 0x12, 0x06, 0x00] + hash)
        #expect(await store.nextSave()?.clientDatabaseHash == known)
        #expect(third.request("0A 0B00") == hex("0B 64"))

        let fourth = restart()
        #expect(fourth.request("0A 0B00") == hex("0B 64"))
        #expect(fourth.request("0A 0800") == hex("0B 01"))
    }
}

/// A bond store in memory that reports every save (`nextSave()`), and fails them with
/// `failure` set.
final class WatchedBondStore: BondStore, Sendable {
    private let base: MemoryBondStore
    private let saves: AsyncStream<Bond>
    private let savesContinuation: AsyncStream<Bond>.Continuation
    let failure = Mutex<BondStoreError?>(nil)

    init(_ bonds: [Bond]) {
        base = MemoryBondStore(bonds)
        (saves, savesContinuation) = AsyncStream.makeStream(of: Bond.self)
    }

    func bond(for peer: LEAddress) -> Bond? { base.bond(for: peer) }
    func allBonds() -> [Bond] { base.allBonds() }
    func remove(_ peer: LEAddress) throws(BondStoreError) { try base.remove(peer) }

    func save(_ bond: Bond) throws(BondStoreError) {
        if let error = failure.withLock({ $0 }) { throw error }
        try base.save(bond)
        savesContinuation.yield(bond)
    }

    /// The next bond saved, or nil when none is within 10 s.
    func nextSave() async -> Bond? {
        let saves = self.saves
        return try? await bounded { () async -> Bond? in
            var iterator = saves.makeAsyncIterator()
            return await iterator.next()
        }
    }
}
