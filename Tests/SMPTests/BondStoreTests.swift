#if canImport(Glibc)
import Glibc
#endif
import Testing
import Synchronization
import BLECore
@testable import SMP

/// The file-backed bond store (layout, permissions, atomic writes, corrupt files) and the
/// import of BlueZ's info files (Fixtures/bluez, in the layout of BlueZ's doc/settings-storage.txt).
struct BondStoreTests {
    static let adapter = BluetoothAddress("00:1B:DC:0F:00:01")!
    static let peer = LEAddress(BluetoothAddress("C4:00:00:00:00:01")!, type: .random)

    static let bond = Bond(
        peer: peer, identityAddress: LEAddress(BluetoothAddress("C4:5E:B1:00:00:01")!, type: .random),
        longTermKey: LongTermKey(key: 0x2965_F176_A108_4A02_FD3F_6A20_CE63_6E20, ediv: 0x1234, rand: 0x0102_0304_0506_0708, keySize: 16, authenticated: true, secureConnections: true),
        identityResolvingKey: 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B, signatureKey: 7, created: 1_700_000_000)

    /// A fresh directory under /tmp, removed with its files afterwards.
    static func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
        var template = Array("/tmp/ble-bonds-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let root = String(cString: try #require(made))
        defer { _ = system("rm -rf '\(root)'") }
        try body(root)
    }

    static func mode(_ path: String) -> UInt32 {
        var st = stat()
        return stat(path, &st) == 0 ? UInt32(st.st_mode) & 0o777 : 0
    }

    @Test func savedBondReadsBackWithPrivatePermissions() throws {
        try Self.withTemporaryDirectory { root in
            let store = try FileBondStore(adapter: Self.adapter, directory: root + "/bonds")
            try store.save(Self.bond)
            let path = store.path(for: Self.peer)
            #expect(path == root + "/bonds/00:1B:DC:0F:00:01/C4:00:00:00:00:01-random")
            #expect(Self.mode(path) == 0o600)
            #expect(Self.mode(root + "/bonds/00:1B:DC:0F:00:01") == 0o700)
            #expect(access(path + ".tmp", F_OK) != 0)
            #expect(store.bond(for: Self.peer) == Self.bond)
            // Found by its identity address too, and by a second store on the same directory.
            #expect(store.bond(for: Self.bond.identityAddress!) == Self.bond)
            #expect(try FileBondStore(adapter: Self.adapter, directory: root + "/bonds").allBonds() == [Self.bond])
            try store.remove(Self.bond.identityAddress!)
            #expect(store.bond(for: Self.peer) == nil)
            try store.remove(Self.peer)  // gone already: no error
        }
    }

    @Test func truncatedAndCorruptFilesAreReportedWithTheirPathAndIgnored() throws {
        try Self.withTemporaryDirectory { root in
            let problems = Mutex<[BondStoreError]>([])
            let store = try FileBondStore(adapter: Self.adapter, directory: root) { e in problems.withLock { $0.append(e) } }
            try store.save(Self.bond)
            let good = store.path(for: Self.peer)
            let text = BondFile.encode(Self.bond)
            let truncated = store.path(for: LEAddress(BluetoothAddress("C4:00:00:00:00:02")!, type: .random))
            try FileBondStore.writeAtomically(String(text.prefix(text.count / 2)), to: truncated)
            let garbage = store.path(for: LEAddress(BluetoothAddress("C4:00:00:00:00:03")!, type: .public))
            try FileBondStore.writeAtomically(BondFile.header + "\npeer=nonsense\nend\n", to: garbage)

            #expect(store.allBonds() == [Self.bond])
            #expect(store.bond(for: LEAddress(BluetoothAddress("C4:00:00:00:00:02")!, type: .random)) == nil)
            let reported = problems.withLock { $0 }
            #expect(reported.contains(.corrupt(path: truncated, detail: "no 'end' line: the file is cut short")))
            #expect(reported.contains(.corrupt(path: garbage, detail: "missing or bad 'peer'")))
            #expect(!reported.contains { if case .corrupt(let p, _) = $0 { return p == good } else { return false } })
            #expect("\(BondStoreError.corrupt(path: truncated, detail: "x"))".contains(truncated))
        }
    }

    @Test func unwritableDirectoryIsATypedError() {
        #expect(throws: BondStoreError.io(path: "/proc/ble-bonds", operation: "creating directory", errno: ENOENT)) {
            try FileBondStore(adapter: Self.adapter, directory: "/proc/ble-bonds")
        }
    }

    static var bluezAdapter: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/Fixtures/bluez/00:1B:DC:0F:00:01"
    }

    @Test func importsBlueZInfoFiles() throws {
        let (bonds, problems) = BlueZImport.bonds(adapterDirectory: Self.bluezAdapter)
        #expect(problems.isEmpty)
        // The BR/EDR-only headset has no LE keys and is left out.
        #expect(bonds.map(\.peer.address.description) == ["C4:5E:B1:00:00:01", "F0:5E:B1:00:00:02"])

        let lock = bonds[0]
        #expect(lock.peer == LEAddress(BluetoothAddress("C4:5E:B1:00:00:01")!, type: .random))
        // Key=20F13C5A... lists the octets least significant first.
        #expect(lock.longTermKey == LongTermKey(key: 0x1A0B_3D7D_2E8D_8CE2_6A6B_FC9B_5A3C_F120, ediv: 0, rand: 0, keySize: 16, authenticated: true, secureConnections: true))
        #expect(lock.longTermKey?.level == .secureConnections)
        #expect(lock.identityResolvingKey == 0x100F_0E0D_0C0B_0A09_0807_0605_0403_0201)
        #expect(lock.signatureKey == 0x0010_2030_4050_6070_8090_A0B0_C0D0_E0F0)

        let thermometer = bonds[1]
        #expect(thermometer.longTermKey == LongTermKey(key: 0xFFEE_DDCC_BBAA_9988_7766_5544_3322_1100, ediv: 4660, rand: 1_311_768_467_294_899_695, keySize: 7, authenticated: false, secureConnections: false))
        #expect(thermometer.localLongTermKey?.ediv == 22136)
        #expect(thermometer.identityResolvingKey == nil)
        // When made: BlueZ keeps no date, so the time its info file was written.
        var info = stat()
        #expect(stat(Self.bluezAdapter + "/F0:5E:B1:00:00:02/info", &info) == 0)
        #expect(thermometer.created == Int64(info.st_mtim.tv_sec))
        #expect(thermometer.created > 0)
    }

    @Test func missingBlueZDirectoryIsReported() {
        let (bonds, problems) = BlueZImport.bonds(adapterDirectory: "/nonexistent/bluetooth")
        #expect(bonds.isEmpty)
        #expect(problems == [.io(path: "/nonexistent/bluetooth", operation: "listing", errno: ENOENT)])
    }
}
