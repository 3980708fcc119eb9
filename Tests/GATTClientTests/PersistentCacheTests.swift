import Testing
import Glibc
import Synchronization
@testable import GATTClient
import BLETestSupport
import BLECore
import BLEWire
import BLETransport
import ATT
import GATTServer

/// The GATT cache on disk: a second cache on the same directory (a restarted app) skips
/// discovery when the peer's Database Hash matches, rediscovers when it does not, survives
/// corrupt files, stays within its bound and refuses an unsafe directory.
@Suite struct PersistentCacheTests {
    static let peer = LEAddress("F0:F1:F2:F3:F4:F5", type: .random)!
    static let discoveryOpcodes: Set<ATTOpcode> = [.readByGroupTypeRequest, .findByTypeValueRequest, .findInformationRequest]

    /// What a cache reported through `onProblem`.
    final class Problems: Sendable {
        private let list = Mutex<[GATTCacheError]>([])
        var all: [GATTCacheError] { list.withLock { $0 } }
        func record(_ p: GATTCacheError) { list.withLock { $0.append(p) } }
    }

    static func fileBytes(_ path: String) -> [UInt8] {
        (try? FileBytes.read(path, atMost: 1 << 20)) ?? []
    }

    static func plant(_ bytes: [UInt8], at path: String) throws {
        let file = try #require(fopen(path, "w"))
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }

    @Test func aRestartedAppSkipsDiscoveryWhenTheHashMatches() async throws {
        let root = try TemporaryDirectory.make("gatt-cache")
        defer { TemporaryDirectory.remove(root) }
        let directory = root + "/state/gatt-cache"
        let executor = AdapterExecutor(label: "gatt-test")
        let firstCache = GATTCache(executor: executor, directory: directory)
        let first = TestBed(cache: firstCache, peer: Self.peer)
        // Nothing exists before the first write.
        #expect(TestFiles.names(in: root) == [])
        _ = try await first.peripheral.descriptors(of: Lab.notifyCounter)
        #expect(await first.peripheral.snapshot.databaseHash?.count == 16)
        try await firstCache.flush()
        #expect(TestFiles.names(in: directory) == ["F0:F1:F2:F3:F4:F5-random"])
        #expect(TestFiles.mode(directory) == 0o700)
        #expect(TestFiles.mode(directory + "/F0:F1:F2:F3:F4:F5-random") == 0o600)
        #expect(Array(Self.fileBytes(directory + "/F0:F1:F2:F3:F4:F5-random").prefix(9)) == Array("BLEGATTC".utf8) + [1])

        // A new cache on the same directory: what a restarted process has.
        let afterFirst = await first.server.receivedOpcodes().count
        let second = TestBed(cache: GATTCache(executor: executor, directory: directory), peer: Self.peer, sharing: first)
        #expect(try await second.peripheral.read(Lab.pattern).count == 600)
        let newOpcodes = await second.server.receivedOpcodes().dropFirst(afterFirst)
        #expect(!newOpcodes.contains { Self.discoveryOpcodes.contains($0) })
        #expect(await second.peripheral.snapshot == first.peripheral.snapshot)
    }

    @Test func aChangedHashRediscoversAndRewrites() async throws {
        let root = try TemporaryDirectory.make("gatt-cache")
        defer { TemporaryDirectory.remove(root) }
        let executor = AdapterExecutor(label: "gatt-test")
        let firstCache = GATTCache(executor: executor, directory: root)
        let first = TestBed(cache: firstCache, peer: Self.peer)
        _ = try await first.peripheral.services()
        try await firstCache.flush()
        let before = Self.fileBytes(root + "/F0:F1:F2:F3:F4:F5-random")

        var changed = GATTDatabase.lab()
        changed.services.append(.init(uuid: BluetoothUUID("180F")!, characteristics: [.init(uuid: BluetoothUUID("2A19")!, properties: [.read], value: [50])]))
        await first.server.replaceDatabase(changed)
        let afterFirst = await first.server.receivedOpcodes().count
        let cache = GATTCache(executor: executor, directory: root)
        let second = TestBed(cache: cache, peer: Self.peer, sharing: first)
        #expect(try await second.peripheral.services().count == 4)
        #expect(await first.server.receivedOpcodes().dropFirst(afterFirst).contains(.readByGroupTypeRequest))
        try await cache.flush()
        let after = Self.fileBytes(root + "/F0:F1:F2:F3:F4:F5-random")
        #expect(after != before)
        #expect(try GATTCacheFile.decode(after, peer: Self.peer).services?.count == 4)
    }

    @Test func aCorruptFileIsReportedRemovedAndRewritten() async throws {
        let root = try TemporaryDirectory.make("gatt-cache")
        defer { TemporaryDirectory.remove(root) }
        let path = root + "/F0:F1:F2:F3:F4:F5-random"
        try Self.plant(Array("BLEGATTC".utf8) + [1, 0xF5, 0xF4], at: path)
        let problems = Problems()
        let executor = AdapterExecutor(label: "gatt-test")
        let cache = GATTCache(executor: executor, directory: root, onProblem: { problems.record($0) })
        let bed = TestBed(cache: cache, peer: Self.peer)
        #expect(try await bed.peripheral.read(Lab.pattern).count == 600)
        #expect(problems.all == [.corrupt(path: path, detail: "GATT cache file: truncated, needs 2 more bytes")])
        #expect(await bed.server.receivedOpcodes().contains(.readByGroupTypeRequest))
        try await cache.flush()
        let rewritten = try GATTCacheFile.decode(Self.fileBytes(path), peer: Self.peer)
        #expect(rewritten.services == (await bed.peripheral.snapshot.services))
    }

    @Test func anOlderVersionsFileIsReplaced() async throws {
        let root = try TemporaryDirectory.make("gatt-cache")
        defer { TemporaryDirectory.remove(root) }
        let path = root + "/F0:F1:F2:F3:F4:F5-random"
        try Self.plant(Array("BLEGATTC".utf8) + [0] + [UInt8](repeating: 0, count: 40), at: path)
        let problems = Problems()
        let cache = GATTCache(executor: AdapterExecutor(label: "gatt-test"), directory: root, onProblem: { problems.record($0) })
        let bed = TestBed(cache: cache, peer: Self.peer)
        _ = try await bed.peripheral.services()
        try await cache.flush()
        #expect(problems.all == [.corrupt(path: path, detail: "GATT cache file: invalid version (this build reads 1) 0x0")])
        #expect(Self.fileBytes(path)[8] == 1)
    }

    @Test func theLeastRecentlyUsedFileMakesRoom() async throws {
        let root = try TemporaryDirectory.make("gatt-cache")
        defer { TemporaryDirectory.remove(root) }
        let cache = GATTCache(executor: AdapterExecutor(label: "gatt-test"), directory: root, maxPeers: 2)
        var snapshot = GATTCacheFileTests.snapshot
        let peers = ["C0:00:00:00:00:01", "C0:00:00:00:00:02", "C0:00:00:00:00:03"].map { LEAddress($0, type: .random)! }
        for peer in peers {
            await cache.store(snapshot, for: peer)
            try await cache.flush()
        }
        #expect(TestFiles.names(in: root) == ["C0:00:00:00:00:02-random", "C0:00:00:00:00:03-random"])
        // An incomplete snapshot (no hash: after Service Changed) is not kept on disk.
        snapshot.databaseHash = nil
        await cache.store(snapshot, for: peers[2])
        try await cache.flush()
        #expect(TestFiles.names(in: root) == ["C0:00:00:00:00:02-random"])
    }

    @Test func privateAddressesAreNotWritten() async throws {
        let root = try TemporaryDirectory.make("gatt-cache")
        defer { TemporaryDirectory.remove(root) }
        let cache = GATTCache(executor: AdapterExecutor(label: "gatt-test"), directory: root)
        // A resolvable private address (top bits 0b01): the next link has another.
        let rpa = LEAddress("4C:00:00:00:00:01", type: .random)!
        await cache.store(GATTCacheFileTests.snapshot, for: rpa)
        try await cache.flush()
        #expect(TestFiles.names(in: root) == [])
        #expect(await cache.snapshot(for: rpa) == GATTCacheFileTests.snapshot)
    }

    @Test func aSymbolicLinkDirectoryIsRefused() async throws {
        let root = try TemporaryDirectory.make("gatt-cache")
        defer { TemporaryDirectory.remove(root) }
        try #require(mkdir(root + "/elsewhere", 0o700) == 0)
        try #require(symlink(root + "/elsewhere", root + "/cache") == 0)
        let problems = Problems()
        let cache = GATTCache(executor: AdapterExecutor(label: "gatt-test"), directory: root + "/cache", onProblem: { problems.record($0) })
        await cache.store(GATTCacheFileTests.snapshot, for: Self.peer)
        try await cache.flush()
        #expect(problems.all == [.unsafeDirectory(path: root + "/cache", detail: "a symbolic link or not a directory")])
        #expect(TestFiles.names(in: root + "/elsewhere") == [])
        // The cache still answers from memory.
        #expect(await cache.snapshot(for: Self.peer) == GATTCacheFileTests.snapshot)
    }

    /// Robust caching (Vol 3, Part G, 2.5.2.1): a server whose database changed answers
    /// Database Out Of Sync (0x12); the client forgets what it discovered, its file goes, and
    /// the next call discovers the new database.
    @Test func databaseOutOfSyncForgetsTheDatabaseAndItsFile() async throws {
        let root = try TemporaryDirectory.make("gatt-cache")
        defer { TemporaryDirectory.remove(root) }
        var database = GATTDatabase.lab()
        database.robustCaching = true
        let cache = GATTCache(executor: AdapterExecutor(label: "gatt-test"), directory: root)
        let bed = TestBed(database, cache: cache, peer: Self.peer)
        #expect(try await bed.peripheral.services().count == 3)
        // Client Supported Features (0x2B29) bit 0: robust caching (Vol 3, Part G, 7.2, Table 7.6).
        let features = CharacteristicIdentifier(uuid: GATTAttributeType.clientSupportedFeatures, service: ServiceIdentifier(uuid: GATTAttributeType.genericAttributeService))
        try await bed.peripheral.write([UInt8(0x01)], to: features)
        try await cache.flush()
        #expect(TestFiles.names(in: root) == ["F0:F1:F2:F3:F4:F5-random"])

        var changed = database
        changed.services.append(.init(uuid: BluetoothUUID("180F")!, characteristics: [.init(uuid: BluetoothUUID("2A19")!, properties: [.read], value: [50])]))
        await bed.server.replaceDatabase(changed)
        do {
            _ = try await bed.peripheral.read(Lab.pattern)
            Issue.record("the read should fail with Database Out Of Sync")
        } catch {
            guard case .attribute(let code, _, _, _) = error else { Issue.record("\(error)"); return }
            #expect(code == .databaseOutOfSync)
        }
        #expect(await bed.peripheral.snapshot.services == [])
        // The forgotten database goes to the cache in a task of the link's.
        await bed.channel.adoptedTasksEnded()
        try await cache.flush()
        #expect(TestFiles.names(in: root) == [])
        let services = try await bed.peripheral.services()
        #expect(services.map(\.uuid).last == BluetoothUUID("180F")!)
    }
}
