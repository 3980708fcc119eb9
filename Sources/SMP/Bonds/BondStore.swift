#if canImport(Glibc)
import Glibc
#endif
import BLECore
import BLEWire
import Synchronization

/// Where bonds are kept between runs. `FileBondStore` is the default; an app may keep them
/// elsewhere (a keychain, a database).
///
///     let store = try FileBondStore(adapter: central.controllerInfo!.address)
///     try await link.pair(store: store)          // saves the bond
public protocol BondStore: Sendable {
    /// The bond of `peer` (by the address it connects with, or its identity address).
    func bond(for peer: LEAddress) -> Bond?
    /// Every bond.
    func allBonds() -> [Bond]
    /// Keeps `bond`, replacing an earlier one of the same peer.
    func save(_ bond: Bond) throws(BondStoreError)
    /// Forgets the bond of `peer`; no error when there is none.
    func remove(_ peer: LEAddress) throws(BondStoreError)
    /// Reads `peer`'s bond, lets `change` edit it and saves it when `change` returns true, as
    /// one step: two writers of one bond (a sign counter, the server's CCCDs) cannot undo each
    /// other's change. Returns whether it saved (false: no bond, or `change` said no).
    ///
    ///     try store.update(peer) { bond in bond.peerSignCounter = 7; return true }
    func update(_ peer: LEAddress, _ change: (inout Bond) -> Bool) throws(BondStoreError) -> Bool
}

extension BondStore {
    /// Read, change, save; one step only as far as the store's `bond(for:)` and `save` are:
    /// a store with writers on several threads implements `update` under its own lock.
    public func update(_ peer: LEAddress, _ change: (inout Bond) -> Bool) throws(BondStoreError) -> Bool {
        guard var bond = bond(for: peer), change(&bond) else { return false }
        try save(bond)
        return true
    }
}

/// A bond store failure, naming the file and the errno.
public enum BondStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A file system call failed.
    case io(path: String, operation: String, errno: Int32)
    /// A bond file does not parse: it is ignored.
    case corrupt(path: String, detail: String)
    /// The bond directory at `path` is not safe to keep keys in: it is refused.
    case unsafeDirectory(path: String, UnsafeDirectory)

    /// Why a bond directory is refused.
    public enum UnsafeDirectory: Sendable, Hashable {
        /// It is a symbolic link (it could point anywhere, also where others can read).
        case symbolicLink
        /// It is a file, not a directory.
        case notADirectory
        /// Another user owns it (`owner`; this process runs as `user`).
        case ownedByAnotherUser(owner: UInt32, user: UInt32)
    }

    public var description: String {
        switch self {
        case .io(let path, let op, let e):
            return "\(op) \(path) failed: \(String(cString: strerror(e))) (errno \(e)); check the directory's permissions or pass --bond-dir"
        case .corrupt(let path, let detail):
            return "bond file \(path) is corrupt (\(detail)); it is ignored: remove it and pair again"
        case .unsafeDirectory(let path, .symbolicLink):
            return "bond directory \(path) is a symbolic link; refusing to keep keys there: use a real directory owned by this user (--bond-dir or BLE_BOND_DIR)"
        case .unsafeDirectory(let path, .notADirectory):
            return "bond directory \(path) is not a directory; remove it or pass another one (--bond-dir or BLE_BOND_DIR)"
        case .unsafeDirectory(let path, .ownedByAnotherUser(let owner, let user)):
            return "bond directory \(path) belongs to user \(owner), not to this user (\(user)); refusing to keep keys there: use a directory of this user's (--bond-dir or BLE_BOND_DIR)"
        }
    }
}

/// Bonds in memory only (tests, or an app that pairs every time).
public final class MemoryBondStore: BondStore {
    /// Apps call the store from any thread, off the data path.
    private let bonds: Mutex<[LEAddress: Bond]>

    public init(_ initial: [Bond] = []) {
        var bonds: [LEAddress: Bond] = [:]
        for b in initial { bonds[b.peer] = b }
        self.bonds = Mutex(bonds)
    }

    public func bond(for peer: LEAddress) -> Bond? {
        bonds.withLock { bonds in bonds[peer] ?? bonds.values.first { $0.identityAddress == peer } }
    }

    public func allBonds() -> [Bond] { bonds.withLock { Array($0.values) } }

    public func save(_ bond: Bond) throws(BondStoreError) { bonds.withLock { $0[bond.peer] = bond } }

    public func update(_ peer: LEAddress, _ change: (inout Bond) -> Bool) throws(BondStoreError) -> Bool {
        bonds.withLock { bonds in
            guard var bond = bonds[peer] ?? bonds.values.first(where: { $0.identityAddress == peer }), change(&bond) else { return false }
            bonds[bond.peer] = bond
            return true
        }
    }

    public func remove(_ peer: LEAddress) throws(BondStoreError) {
        bonds.withLock { bonds in bonds = bonds.filter { $0.key != peer && $0.value.identityAddress != peer } }
    }
}
