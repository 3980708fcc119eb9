#if canImport(Glibc)
import Glibc
#endif
import BLECore
import SMP
import BLEWire

/// `ble bonds`: lists, removes and imports bonds. It reads and writes the bond directory
/// only, for every adapter there, and never opens a controller: the store is keyed by adapter
/// and peer, and each line names its adapter.
enum BondsCommand {
    /// Where bluetoothd keeps its bonds (`<adapter>/<peer>/info`).
    static let blueZDirectory = "/var/lib/bluetooth"

    static let spec = CommandSpec(
        name: "bonds",
        summary: "list the bonds of every adapter, remove one, or import BlueZ's",
        usage: ["bonds [--json]", "bonds --remove ADDR", "bonds --import-bluez [DIR]"],
        options: [
            .value("remove", nil, "ADDR", "forget the bond of ADDR (its address or identity address), on every adapter"),
            .flag("import-bluez", nil, "copy the LE bonds bluetoothd kept in DIR/<adapter>/<peer>/info, for every adapter (DIR default \(blueZDirectory))"),
        ],
        details: ["Bonds live in --bond-dir, $BLE_BOND_DIR, or ~/.local/state/swift-ble-host/bonds: a directory per adapter (its address), a file per peer, mode 0600. The command works on those files alone, for every adapter, and opens no controller (-d is not used); each bond names its adapter."],
        examples: [
            ("ble bonds", "C4:5E:B1:00:00:01/random  identity C4:5E:B1:00:00:01/random  LTK IRK CSRK  encrypted, authenticated, Secure Connections  since 2026-12-02 11:47:29 UTC  adapter 00:1B:DC:0F:00:01"),
            ("ble bonds --remove C4:5E:B1:00:00:01", "removed the bond with C4:5E:B1:00:00:01"),
            ("sudo ble bonds --import-bluez", "imported 2 bonds from /var/lib/bluetooth/00:1B:DC:0F:00:01"),
        ],
        run: run)

    /// The bond store of the central's adapter.
    static func store(_ ctx: CommandContext, central: Central) async throws -> FileBondStore {
        guard let adapter = await central.controllerInfo?.address else { throw CLIFailure("the controller did not report its address; cannot find its bonds") }
        return try store(ctx, adapter: adapter)
    }

    /// The bond store of `adapter` in the bond directory (created by the first saved bond).
    static func store(_ ctx: CommandContext, adapter: BluetoothAddress) throws -> FileBondStore {
        let console = ctx.console
        do throws(BondStoreError) {
            return try FileBondStore(adapter: adapter, directory: ctx.globals.bondDirectory) { console.error("\($0)") }
        } catch {
            throw CLIFailure("\(error)")
        }
    }

    /// The store of every adapter that has bonds in the bond directory.
    static func stores(_ ctx: CommandContext) throws -> [(adapter: BluetoothAddress, store: FileBondStore)] {
        let adapters: [BluetoothAddress]
        do throws(BondStoreError) { adapters = try FileBondStore.adapters(in: ctx.globals.bondDirectory) } catch { throw CLIFailure("\(error)") }
        return try adapters.map { ($0, try store(ctx, adapter: $0)) }
    }

    static func run(_ ctx: CommandContext) async throws {
        let importing = ctx.args.has("import-bluez")
        let remove = try ctx.args.value("remove").map { v throws(UsageError) -> BluetoothAddress in
            guard let a = BluetoothAddress(v) else { throw UsageError("--remove needs an address like C4:5E:B1:00:00:01, not \"\(v)\"") }
            return a
        }
        if importing && remove != nil { throw UsageError("--remove and --import-bluez each do one job; give one of them") }
        if importing {
            guard ctx.args.positionals.count <= 1 else {
                throw UsageError("--import-bluez takes one DIR, not \"\(ctx.args.positionals[1])\" too; usage: ble \(spec.usage[2])")
            }
            return try importBlueZ(ctx, from: ctx.args.positionals.first ?? blueZDirectory)
        }
        _ = try ctx.positionals([])
        if let remove { return try removeBonds(ctx, of: remove) }
        for (adapter, store) in try stores(ctx) {
            for b in store.allBonds() {
                ctx.console.out(ctx.globals.json ? json(b, adapter: adapter).text : line(b, adapter: adapter))
            }
        }
    }

    static func removeBonds(_ ctx: CommandContext, of address: BluetoothAddress) throws {
        var removed = false
        for (_, store) in try stores(ctx) {
            for b in store.allBonds() where b.peer.address == address || b.identityAddress?.address == address {
                do throws(BondStoreError) { try store.remove(b.peer) } catch { throw CLIFailure("\(error)") }
                removed = true
            }
        }
        guard removed else { throw CLIFailure("no bond with \(address) in \(ctx.globals.bondDirectory ?? FileBondStore.defaultDirectory)") }
        ctx.console.out("removed the bond with \(address)")
    }

    /// Copies the bonds of every adapter directory in BlueZ's `directory` into that adapter's
    /// store; one line per adapter.
    static func importBlueZ(_ ctx: CommandContext, from directory: String) throws {
        let adapters: [(adapter: BluetoothAddress, directory: String)]
        do throws(BondStoreError) {
            adapters = try BlueZImport.adapters(in: directory)
        } catch {
            guard case .io(_, _, let e) = error else { throw CLIFailure("\(error)") }
            throw CLIFailure(unreadable(directory, errno: e))
        }
        guard !adapters.isEmpty else {
            ctx.console.out("imported 0 bonds: \(directory) holds no adapter directory (<adapter address>/<peer address>/info)")
            return
        }
        for (adapter, adapterDirectory) in adapters {
            let (bonds, problems) = BlueZImport.bonds(adapterDirectory: adapterDirectory)
            for p in problems { ctx.console.error("\(p)") }
            let adapterStore = try store(ctx, adapter: adapter)
            for b in bonds {
                do throws(BondStoreError) { try adapterStore.save(b) } catch { throw CLIFailure("\(error)") }
            }
            ctx.console.out("imported \(bonds.count) bond\(bonds.count == 1 ? "" : "s") from \(adapterDirectory)")
        }
    }

    /// Why BlueZ's directory could not be listed, and what to run instead.
    static func unreadable(_ directory: String, errno e: Int32) -> String {
        let what = "cannot list BlueZ's bond directory \(directory): \(String(cString: strerror(e))) (errno \(e))"
        switch e {
        case EACCES, EPERM:
            return what + "; bluetoothd keeps it readable by root only: run with sudo, or name a readable copy: ble bonds --import-bluez DIR"
        case ENOENT, ENOTDIR:
            return what + "; name the directory that holds <adapter address>/<peer address>/info: ble bonds --import-bluez DIR"
        default:
            return what + "; name another directory: ble bonds --import-bluez DIR"
        }
    }

    static func keys(_ b: Bond) -> [String] {
        var k: [String] = []
        if b.longTermKey != nil { k.append("LTK") }
        if b.identityResolvingKey != nil { k.append("IRK") }
        if b.signatureKey != nil { k.append("CSRK") }
        if b.localSignatureKey != nil { k.append("local-CSRK#\(b.localSignCounter)") }
        return k
    }

    static func line(_ b: Bond, adapter: BluetoothAddress) -> String {
        let id = b.identityAddress.map { "identity \($0.address)/\($0.type.isRandom ? "random" : "public")" } ?? "no identity"
        let level = b.longTermKey.map { Self.level(authenticated: $0.authenticated, secureConnections: $0.secureConnections) } ?? "no LTK"
        return "\(b.peer.address)/\(b.peer.type.isRandom ? "random" : "public")  \(id)  \(keys(b).joined(separator: " "))  \(level)  since \(date(b.created))  adapter \(adapter)"
    }

    static func json(_ b: Bond, adapter: BluetoothAddress) -> JSONValue {
        .object([("adapter", .string("\(adapter)")), ("address", .string("\(b.peer.address)")), ("identity", b.identityAddress.map { .string("\($0.address)") } ?? .null),
                 ("keys", .array(keys(b).map { .string($0) })),
                 ("level", .string(b.longTermKey.map { level(authenticated: $0.authenticated, secureConnections: $0.secureConnections) } ?? "none")),
                 ("created", .int(Int(b.created)))])
    }

    /// What a key gives a link: "encrypted, authenticated, Secure Connections" (or "legacy"),
    /// the words `ble pair` prints too.
    static func level(authenticated: Bool, secureConnections: Bool) -> String {
        (authenticated ? ["encrypted", "authenticated"] : ["encrypted"]).joined(separator: ", ") + (secureConnections ? ", Secure Connections" : ", legacy")
    }

    /// "2026-12-02 11:47:29 UTC" ("an unknown date" for 0, a bond from before dates were kept).
    static func date(_ seconds: Int64) -> String {
        guard seconds > 0 else { return "an unknown date" }
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        var text = [CChar](repeating: 0, count: 32)
        let n = strftime(&text, text.count, "%Y-%m-%d %H:%M:%S UTC", &parts)
        return String(decoding: text.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
