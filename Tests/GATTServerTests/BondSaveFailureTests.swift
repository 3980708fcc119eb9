import Dispatch
import Glibc
import Synchronization
import Testing
import BLETestSupport
import BLETransport
import GATTServer
import SMP
import BLEWire

/// A bond store that cannot save the state the server keeps of a bonded client (here its
/// CCCDs) is not silent: `activity()` reports `bondNotSaved` with the store's error, the
/// server's logger gets a warning naming the peer and the errno, and the next change is
/// saved again once the store works.
struct BondSaveFailureTests {
    static let peer = LEAddress(BluetoothAddress("C4:00:00:00:00:02")!, type: .random)

    @Test func aFailedSaveIsReportedAndLogged() async throws {
        let store = WatchedBondStore([Bond(peer: Self.peer)])
        let failure = BondStoreError.io(path: "/bonds/C4:00:00:00:00:02", operation: "writing", errno: ENOSPC)
        store.failure.withLock { $0 = failure }
        let records = Mutex<[BLELogRecord]>([])
        let logger = BLELogger(minimumLevel: .warning) { record in records.withLock { $0.append(record) } }
        let queue = DispatchQueue(label: "bond-save-failure")
        let server = GATTServer(database: ServerBed.database, queue: queue, logger: logger)
        let activity = await server.activity()
        let link = CaptureLink(bondedPeer: Self.peer, store: store)
        queue.sync {
            server.connect(link)
            server.receive(hex("12 0A00 0100"), on: link)   // Write Request: the level's CCCD = notifications
        }
        #expect(link.drain() == [hex("13")])
        var failed: GATTServerActivity?
        for await event in activity {
            if case .bondNotSaved = event { failed = event; break }
        }
        #expect(failed == .bondNotSaved(peer: Self.peer, error: failure))
        let warnings = records.withLock { $0 }
        #expect(warnings.count == 1)
        #expect(warnings.first?.level == .warning)
        #expect(warnings.first?.metadata["peer"] == "\(Self.peer)")
        #expect(warnings.first?.metadata["errno"] == "\(ENOSPC)")
        #expect(warnings.first?.message.contains("errno \(ENOSPC)") == true)

        // The store works again: the next change is saved with everything kept.
        store.failure.withLock { $0 = nil }
        queue.sync { server.receive(hex("12 0400 0200"), on: link) }   // Service Changed's CCCD = indications
        #expect(link.drain() == [hex("13")])
        let saved = await store.nextSave()
        #expect(saved?.clientConfigurations == [0x0004: 0x0002, 0x000A: 0x0001])
    }
}
