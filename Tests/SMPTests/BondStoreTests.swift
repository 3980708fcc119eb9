#if canImport(Glibc)
import Glibc
#endif
import Testing
import Synchronization
import BLECore
@testable import SMP
import BLEWire
import BLETestSupport

/// The file-backed bond store (layout, permissions, atomic writes, corrupt files) and the
/// import of BlueZ's info files (Fixtures/bluez, in the layout of BlueZ's doc/settings-storage.txt).
struct BondStoreTests {
    static let adapter = BluetoothAddress("00:1B:DC:0F:00:01")!
    static let peer = LEAddress(BluetoothAddress("C4:00:00:00:00:01")!, type: .random)

    static let bond = Bond(
        peer: peer, identityAddress: LEAddress(BluetoothAddress("C4:5E:B1:00:00:01")!, type: .random),
        longTermKey: LongTermKey(key: 0x2965_F176_A108_4A02_FD3F_6A20_CE63_6E20, ediv: 0x1234, rand: 0x0102_0304_0506_0708, keySize: 16, authenticated: true, secureConnections: true),
        identityResolvingKey: 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B, signatureKey: 7, created: 1_700_000_000)

    /// Writes `text` to `path` (a file a test plants).
    static func plant(_ text: String, at path: String) throws {
        let file = try #require(fopen(path, "w"))
        fputs(text, file)
        fclose(file)
    }

    /// The text of the file at `path` (nil when it cannot be read).
    static func contents(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while case let n = fread(&buffer, 1, buffer.count, file), n > 0 { bytes += buffer[0..<n] }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func savedBondReadsBackWithPrivatePermissions() throws {
        try TemporaryDirectory.with("bonds") { root in
            let store = try FileBondStore(adapter: Self.adapter, directory: root + "/bonds")
            try store.save(Self.bond)
            let path = store.path(for: Self.peer)
            #expect(path == root + "/bonds/00:1B:DC:0F:00:01/C4:00:00:00:00:01-random")
            #expect(TestFiles.mode(path) == 0o600)
            #expect(TestFiles.mode(root + "/bonds/00:1B:DC:0F:00:01") == 0o700)
            // Only the bond: no temporary file left behind.
            #expect(TestFiles.names(in: root + "/bonds/00:1B:DC:0F:00:01") == ["C4:00:00:00:00:01-random"])
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
        try TemporaryDirectory.with("bonds") { root in
            let problems = Mutex<[BondStoreError]>([])
            let store = try FileBondStore(adapter: Self.adapter, directory: root) { e in problems.withLock { $0.append(e) } }
            try store.save(Self.bond)
            let good = store.path(for: Self.peer)
            let text = BondFile.encode(Self.bond)
            let truncated = store.path(for: LEAddress(BluetoothAddress("C4:00:00:00:00:02")!, type: .random))
            try Self.plant(String(text.prefix(text.count / 2)), at: truncated)
            let garbage = store.path(for: LEAddress(BluetoothAddress("C4:00:00:00:00:03")!, type: .public))
            try Self.plant(BondFile.header + "\npeer=nonsense\nend\n", at: garbage)

            #expect(store.allBonds() == [Self.bond])
            #expect(store.bond(for: LEAddress(BluetoothAddress("C4:00:00:00:00:02")!, type: .random)) == nil)
            let reported = problems.withLock { $0 }
            #expect(reported.contains(.corrupt(path: truncated, detail: "no 'end' line: the file is cut short")))
            #expect(reported.contains(.corrupt(path: garbage, detail: "missing or bad 'peer'")))
            #expect(!reported.contains { if case .corrupt(let p, _) = $0 { return p == good } else { return false } })
            #expect("\(BondStoreError.corrupt(path: truncated, detail: "x"))".contains(truncated))
        }
    }

    @Test func unwritableDirectoryIsATypedErrorOfTheSave() throws {
        // Opening and reading need nothing on disk; the save is what must create the directory.
        let store = try FileBondStore(adapter: Self.adapter, directory: "/proc/ble-bonds")
        #expect(store.allBonds().isEmpty)
        #expect(throws: BondStoreError.io(path: "/proc/ble-bonds", operation: "creating directory", errno: ENOENT)) {
            try store.save(Self.bond)
        }
    }

    /// Commands that only read bonds (scan, read, inspect, write) open the store: that creates
    /// nothing, so they run with a read-only home; the first save creates the directories.
    @Test func readingCreatesNothingAndTheFirstSaveCreatesTheDirectories() throws {
        try TemporaryDirectory.with("bonds") { root in
            let bonds = root + "/state/swift-ble-host/bonds"
            let store = try FileBondStore(adapter: Self.adapter, directory: bonds)
            #expect(store.allBonds().isEmpty)
            #expect(store.bond(for: Self.peer) == nil)
            try store.remove(Self.peer)
            #expect(try FileBondStore.adapters(in: bonds).isEmpty)
            #expect(TestFiles.names(in: root).isEmpty, "nothing created by opening, reading or removing")
            try store.save(Self.bond)
            #expect(TestFiles.mode(bonds) == 0o700)
            #expect(TestFiles.mode(bonds + "/00:1B:DC:0F:00:01") == 0o700)
            #expect(TestFiles.names(in: bonds + "/00:1B:DC:0F:00:01") == ["C4:00:00:00:00:01-random"])
            #expect(store.bond(for: Self.peer) == Self.bond)
        }
    }

    /// An existing bond directory that cannot be written (a read-only home) is read as usual:
    /// its adapter directory, private already, is not chmod-ed.
    @Test func readOnlyBondDirectoryIsRead() throws {
        try TemporaryDirectory.with("bonds") { root in
            try FileBondStore(adapter: Self.adapter, directory: root + "/bonds").save(Self.bond)
            #expect(chmod(root + "/bonds/00:1B:DC:0F:00:01", 0o500) == 0 && chmod(root + "/bonds", 0o500) == 0)
            defer { _ = chmod(root + "/bonds", 0o700); _ = chmod(root + "/bonds/00:1B:DC:0F:00:01", 0o700) }
            let store = try FileBondStore(adapter: Self.adapter, directory: root + "/bonds")
            #expect(store.allBonds() == [Self.bond])
            #expect(TestFiles.mode(root + "/bonds/00:1B:DC:0F:00:01") == 0o500)
        }
    }

    // MARK: Planted links (the tool may run as root in a directory others can write to)

    /// The adapter's directory is a symbolic link to somewhere else: refused, naming it,
    /// before anything is written there.
    @Test func symbolicLinkAsTheAdapterDirectoryIsRefused() throws {
        try TemporaryDirectory.with("bonds") { root in
            #expect(mkdir(root + "/bonds", 0o700) == 0 && mkdir(root + "/elsewhere", 0o755) == 0)
            let adapterDirectory = root + "/bonds/00:1B:DC:0F:00:01"
            #expect(symlink(root + "/elsewhere", adapterDirectory) == 0)
            #expect(throws: BondStoreError.unsafeDirectory(path: adapterDirectory, .symbolicLink)) {
                try FileBondStore(adapter: Self.adapter, directory: root + "/bonds")
            }
            #expect(TestFiles.mode(root + "/elsewhere") == 0o755)
            #expect(TestFiles.names(in: root + "/elsewhere").isEmpty)
        }
    }

    /// The bond directory itself is a symbolic link: refused before the adapter's directory
    /// is made through it.
    @Test func symbolicLinkAsTheBondDirectoryIsRefused() throws {
        try TemporaryDirectory.with("bonds") { root in
            #expect(mkdir(root + "/real", 0o700) == 0)
            #expect(symlink(root + "/real", root + "/bonds") == 0)
            #expect(throws: BondStoreError.unsafeDirectory(path: root + "/bonds", .symbolicLink)) {
                try FileBondStore(adapter: Self.adapter, directory: root + "/bonds")
            }
            #expect(TestFiles.names(in: root + "/real").isEmpty)
            let error = BondStoreError.unsafeDirectory(path: root + "/bonds", .symbolicLink)
            #expect("\(error)" == "bond directory \(root)/bonds is a symbolic link; refusing to keep keys there: use a real directory owned by this user (--bond-dir or BLE_BOND_DIR)")
        }
    }

    /// A bond directory another user owns is refused (as root: one given to nobody, 65534;
    /// otherwise "/", which root owns).
    @Test func bondDirectoryOfAnotherUserIsRefused() throws {
        try TemporaryDirectory.with("bonds") { root in
            var directory = "/"
            var owner: UInt32 = 0
            if geteuid() == 0 {
                directory = root + "/bonds"
                owner = 65534
                #expect(mkdir(directory, 0o700) == 0 && chown(directory, owner, owner) == 0)
            }
            #expect(throws: BondStoreError.unsafeDirectory(path: directory, .ownedByAnotherUser(owner: owner, user: geteuid()))) {
                try FileBondStore(adapter: Self.adapter, directory: directory)
            }
            if geteuid() == 0 { #expect(TestFiles.names(in: directory).isEmpty) }
        }
    }

    /// A symbolic link planted at a bond's file name is not read through, and a save replaces
    /// the link itself: the file it points to is untouched.
    @Test func plantedLinkAtABondFileIsNeitherReadNorWrittenThrough() throws {
        try TemporaryDirectory.with("bonds") { root in
            let problems = Mutex<[BondStoreError]>([])
            // A store whose directory exists (the first save creates it).
            #expect(mkdir(root + "/bonds", 0o700) == 0 && mkdir(root + "/bonds/00:1B:DC:0F:00:01", 0o700) == 0)
            let store = try FileBondStore(adapter: Self.adapter, directory: root + "/bonds") { e in problems.withLock { $0.append(e) } }
            let victim = root + "/victim"
            try Self.plant(BondFile.encode(Self.bond), at: victim)
            let path = store.path(for: Self.peer)
            #expect(symlink(victim, path) == 0)
            #expect(store.bond(for: Self.peer) == nil)
            #expect(problems.withLock { $0 }.contains(.io(path: path, operation: "opening", errno: ELOOP)))

            var saved = Self.bond
            saved.created = 1_800_000_000
            try store.save(saved)
            #expect(Self.contents(victim) == BondFile.encode(Self.bond))
            var st = stat()
            #expect(lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFREG)
            #expect(TestFiles.mode(path) == 0o600)
            #expect(store.bond(for: Self.peer) == saved)
        }
    }

    /// A link planted at the temporary file's name: the write refuses to open it (O_EXCL |
    /// O_NOFOLLOW) and fails with the path; the file it points to is untouched.
    @Test func plantedLinkAtTheTemporaryFileFailsTheSave() throws {
        try TemporaryDirectory.with("bonds") { root in
            #expect(mkdir(root + "/bonds", 0o700) == 0 && mkdir(root + "/bonds/00:1B:DC:0F:00:01", 0o700) == 0)
            let store = try FileBondStore(adapter: Self.adapter, directory: root + "/bonds")
            let victim = root + "/victim"
            try Self.plant("untouched\n", at: victim)
            // The first write of a store uses ".<file>.<pid>.1.tmp".
            let temp = store.directory + "/.C4:00:00:00:00:01-random.\(getpid()).1.tmp"
            #expect(symlink(victim, temp) == 0)
            #expect(throws: BondStoreError.io(path: temp, operation: "creating", errno: EEXIST)) { try store.save(Self.bond) }
            #expect(Self.contents(victim) == "untouched\n")
            // The next write takes a new name and succeeds.
            try store.save(Self.bond)
            #expect(store.bond(for: Self.peer) == Self.bond)
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

/// The adapter's own identity next to its bonds, and resolvable private addresses from it.
struct OwnIdentityTests {
    /// Vol 3, Part H, D.7 (ah): IRK ec0234a357c8ad05341010a60a397d9b, prand 708194 give hash
    /// 0dfbaa: the address 70:81:94:0D:FB:AA.
    @Test func resolvablePrivateAddressFromTheSpecificationVector() throws {
        let irk: UInt128 = 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B
        #expect(try ResolvablePrivateAddress.make(irk: irk, prand: 0x708194).address == BluetoothAddress("70:81:94:0D:FB:AA")!)
        let prand = ResolvablePrivateAddress.randomPrand()
        #expect(prand >> 22 == 0b01)
    }

    @Test func staticAddressAndIRKAreMadeOnceAndKeptPrivately() throws {
        try TemporaryDirectory.with("bonds") { root in
            let store = try FileBondStore(adapter: BondStoreTests.adapter, directory: root + "/bonds")
            #expect(TestFiles.names(in: root).isEmpty)
            let address = try store.staticRandomAddress()
            #expect(address.isStaticRandom)
            #expect(try store.staticRandomAddress() == address)
            #expect(try FileBondStore(adapter: BondStoreTests.adapter, directory: root + "/bonds").staticRandomAddress() == address)
            let irk = try store.localIdentityResolvingKey()
            #expect(try store.localIdentityResolvingKey() == irk)
            let directory = root + "/bonds/00:1B:DC:0F:00:01"
            #expect(TestFiles.names(in: directory) == ["own-irk", "own-static-address"])
            #expect(TestFiles.mode(directory + "/own-irk") == 0o600)
            #expect(BondStoreTests.contents(directory + "/own-static-address") == "\(address)\n")
            // Not bonds: they do not show among them.
            #expect(store.allBonds().isEmpty)
        }
    }
}
