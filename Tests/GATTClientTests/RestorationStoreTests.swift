import Testing
import Glibc
import BLECore
@testable import GATTClient
import BLEWire
import BLETestSupport
import BLETransport

/// The restoration store on disk: atomic writes of mode 0600 in a 0700 directory made on the
/// first save, and files it cannot use kept aside with a typed error, never lost.
@Suite struct RestorationStoreTests {

    static func plant(_ bytes: [UInt8], at path: String) throws {
        let file = try #require(fopen(path, "w"))
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }

    @Test func savesAtomicallyAndLoadsBack() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        let store = RestorationStore(identifier: "hall", directory: root + "/state")
        // Nothing is created before the first save.
        #expect(try await store.load() == [])
        #expect(TestFiles.names(in: root) == [])
        try await store.save([RestorationFileTests.link])
        #expect(TestFiles.names(in: root + "/state") == ["hall"])
        #expect(TestFiles.mode(root + "/state") == 0o700)
        #expect(TestFiles.mode(root + "/state/hall") == 0o600)
        #expect(try FileBytes.read(root + "/state/hall", atMost: 4096) == RestorationFileTests.bytes)
        #expect(try await RestorationStore(identifier: "hall", directory: root + "/state").load() == [RestorationFileTests.link])
        // Saving nothing removes the file.
        try await store.save([])
        #expect(TestFiles.names(in: root + "/state") == [])
    }

    @Test func aCorruptFileIsKeptAsideWithATypedError() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        var damaged = RestorationFileTests.bytes
        damaged[20] ^= 0x40
        try Self.plant(damaged, at: root + "/hall")
        let store = RestorationStore(identifier: "hall", directory: root)
        await #expect(throws: RestorationError.corrupt(path: root + "/hall", keptAt: root + "/hall.corrupt",
                                                       detail: "restoration file: CRC-32 mismatch: the file is damaged")) {
            try await store.load()
        }
        #expect(TestFiles.names(in: root) == ["hall.corrupt"])
        #expect(try FileBytes.read(root + "/hall.corrupt", atMost: 4096) == damaged)
        // The store starts empty; a second bad file does not replace the first one kept.
        #expect(try await store.load() == [])
        try Self.plant(Array("BLERESTO".utf8) + [1, 0], at: root + "/hall")
        await #expect(throws: RestorationError.corrupt(path: root + "/hall", keptAt: root + "/hall.corrupt.2",
                                                       detail: "restoration file: truncated, needs 3 more bytes")) {
            try await store.load()
        }
        #expect(TestFiles.names(in: root) == ["hall.corrupt", "hall.corrupt.2"])
    }

    @Test func anOlderVersionsFileIsKeptForTheBuildThatReadsIt() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        var older = RestorationFileTests.bytes
        older[8] = 0
        try Self.plant(older, at: root + "/hall")
        let store = RestorationStore(identifier: "hall", directory: root)
        let error = await #expect(throws: RestorationError.self) { try await store.load() }
        #expect(error == .unsupportedVersion(path: root + "/hall", version: 0, keptAt: root + "/hall.v0"))
        #expect(error?.description == "restoration file \(root)/hall is version 0, this build reads version 1; it was kept at \(root)/hall.v0 and the app starts with no stored links")
        #expect(try FileBytes.read(root + "/hall.v0", atMost: 4096) == older)
        try await store.save([RestorationFileTests.link])
        #expect(TestFiles.names(in: root) == ["hall", "hall.v0"])
    }

    @Test func theIdentifierNamesAFileInTheDirectory() {
        #expect(RestorationStore(identifier: "../escape", directory: "/state").path == "/state/_._escape")
        #expect(RestorationStore(identifier: "..", directory: "/state").path == "/state/_.")
        #expect(RestorationStore(identifier: "", directory: "/state").path == "/state/default")
    }

    @Test func theBoundsAreKept() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        let store = RestorationStore(identifier: "hall", directory: root)
        let many = (0..<(RestorationFile.maximumLinks + 1)).map { RestorableLink(peer: LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_00 | UInt64($0)), type: .random)) }
        await #expect(throws: RestorationError.tooMany(what: "links", limit: 1024)) { try await store.save(many) }
        #expect(TestFiles.names(in: root) == [])
    }

    @Test func aSymbolicLinkDirectoryIsRefused() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        mkdir(root + "/real", 0o700)
        symlink(root + "/real", root + "/link")
        let store = RestorationStore(identifier: "hall", directory: root + "/link")
        await #expect(throws: RestorationError.unsafeDirectory(path: root + "/link", detail: "a symbolic link or not a directory")) {
            try await store.save([RestorationFileTests.link])
        }
        #expect(TestFiles.names(in: root + "/real") == [])
    }
}
