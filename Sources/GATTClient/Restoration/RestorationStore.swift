#if canImport(Glibc)
import Glibc
import BLETransport
#endif

/// Where a `Restoration` keeps an app's links: one file in the app's state directory,
/// versioned, bounded (`RestorationFile.maximumLinks` links of at most
/// `RestorationFile.maximumSubscriptions` subscriptions), written atomically (a new temporary
/// file, synced, renamed over the old one). A file that cannot be used (damaged, or another
/// version's) is never lost: `load()` moves it aside (`<name>.corrupt`, `<name>.v<N>`), throws
/// the `RestorationError` that names both paths, and the store starts empty. Nothing is
/// created before the first save. It runs on its own executor, so file I/O never holds the
/// adapter's queue.
///
///     let store = RestorationStore(identifier: "hall-sensors")   // $XDG_STATE_HOME/swift-ble-host/restoration/hall-sensors
public actor RestorationStore {
    /// The file's path.
    public nonisolated let path: String
    private let file: StateFile

    /// The directory `init(identifier:)` uses: `BLE_RESTORATION_DIR`, else
    /// `$XDG_STATE_HOME/swift-ble-host/restoration`, else `~/.local/state/swift-ble-host/restoration`.
    public static var defaultDirectory: String {
        if let d = getenv("BLE_RESTORATION_DIR"), d.pointee != 0 { return String(cString: d) }
        if let x = getenv("XDG_STATE_HOME"), x.pointee != 0 { return String(cString: x) + "/swift-ble-host/restoration" }
        let home = getenv("HOME").map { String(cString: $0) } ?? "/tmp"
        return home + "/.local/state/swift-ble-host/restoration"
    }

    /// The store named `identifier` (one per app and adapter, like a restore identifier) in
    /// `directory`.
    public init(identifier: String, directory: String = RestorationStore.defaultDirectory) {
        // A name, not a path: '/' would leave the directory, and a leading '.' makes "..",
        // or a name the temporary files could take.
        var name = identifier.isEmpty ? "default" : String(identifier.map { $0 == "/" ? "_" : $0 })
        if name.hasPrefix(".") { name = "_" + name.dropFirst() }
        file = StateFile(directory: directory, name: name)
        path = file.path
    }

    /// The stored links; none when there is no file. Throws `.corrupt` or
    /// `.unsupportedVersion` after moving an unusable file aside (the next `save` writes a
    /// new one), `.io` or `.unsafeDirectory` when the file cannot be read.
    ///
    ///     let links = try await store.load()
    public func load() throws(RestorationError) -> [RestorableLink] {
        let bytes: [UInt8]
        do throws(StateFileError) {
            guard let read = try file.read(atMost: RestorationFile.maximumSize + 1) else { return [] }
            bytes = read
        } catch {
            throw RestorationError(error)
        }
        do throws(RestorationFile.Problem) {
            return try RestorationFile.decode(bytes)
        } catch {
            switch error {
            case .version(let v):
                throw .unsupportedVersion(path: path, version: v, keptAt: try moveAside("v\(v)"))
            case .corrupt(let why):
                throw .corrupt(path: path, keptAt: try moveAside("corrupt"), detail: "\(why)")
            }
        }
    }

    /// Replaces what is stored with `links` (none: the file is removed).
    ///
    ///     try await store.save([RestorableLink(peer: sensor, reconnect: .never)])
    public func save(_ links: [RestorableLink]) throws(RestorationError) {
        guard links.count <= RestorationFile.maximumLinks else { throw .tooMany(what: "links", limit: RestorationFile.maximumLinks) }
        guard links.allSatisfy({ $0.subscriptions.count <= RestorationFile.maximumSubscriptions }) else {
            throw .tooMany(what: "subscriptions per link", limit: RestorationFile.maximumSubscriptions)
        }
        do throws(StateFileError) {
            if links.isEmpty { try file.remove() } else { try file.write(RestorationFile.encode(links)) }
        } catch {
            throw RestorationError(error)
        }
    }

    private func moveAside(_ suffix: String) throws(RestorationError) -> String {
        do throws(StateFileError) { return try file.moveAside(suffix: suffix) } catch { throw RestorationError(error) }
    }
}
