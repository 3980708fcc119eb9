#if canImport(Glibc)
import Glibc
#endif
import BLECore
import SMP

/// `ble bonds`: lists, removes and imports bonds of the adapter named by `-d`.
enum BondsCommand {
    static let spec = CommandSpec(
        name: "bonds",
        summary: "list the bonds of the adapter, remove one, or import BlueZ's",
        usage: ["bonds [--remove ADDR] [--import-bluez DIR]"],
        options: [
            .value("remove", nil, "ADDR", "forget the bond of ADDR (its address or identity address)"),
            .value("import-bluez", nil, "DIR", "copy the LE bonds bluetoothd kept in DIR/<adapter>/<peer>/info (DIR is usually /var/lib/bluetooth)"),
        ],
        details: ["Bonds live in --bond-dir, $BLE_BOND_DIR, or ~/.local/state/swift-ble-host/bonds: one file per adapter and peer, mode 0600."],
        examples: [
            ("ble bonds", "C4:5E:B1:00:00:01/random  identity C4:5E:B1:00:00:01/random  LTK IRK CSRK  encrypted, authenticated, Secure Connections"),
            ("sudo ble bonds --import-bluez /var/lib/bluetooth", "imported 2 bonds"),
        ],
        run: run)

    /// The bond store of the central's adapter.
    static func store(_ ctx: CommandContext, central: Central) async throws -> FileBondStore {
        guard let adapter = await central.controllerInfo?.address else { throw CLIFailure("the controller did not report its address; cannot find its bonds") }
        let console = ctx.console
        do throws(BondStoreError) {
            return try FileBondStore(adapter: adapter, directory: ctx.globals.bondDirectory) { console.error("\($0)") }
        } catch {
            throw CLIFailure("\(error)")
        }
    }

    static func run(_ ctx: CommandContext) async throws {
        _ = try ctx.positionals([])
        let remove = try ctx.args.value("remove").map { v throws(UsageError) -> LEAddress in
            guard let a = BluetoothAddress(v) else { throw UsageError("--remove needs an address like C4:5E:B1:00:00:01, not \"\(v)\"") }
            return LEAddress(a, type: .random)
        }
        try await withCentral(ctx) { central in
            let store = try await store(ctx, central: central)
            if let remove {
                let matches = store.allBonds().filter { $0.peer.address == remove.address || $0.identityAddress?.address == remove.address }
                guard !matches.isEmpty else { throw CLIFailure("no bond with \(remove.address) in \(store.directory)") }
                for b in matches {
                    do throws(BondStoreError) { try store.remove(b.peer) } catch { throw CLIFailure("\(error)") }
                }
                ctx.console.out("removed the bond with \(remove.address)")
                return
            }
            if let dir = ctx.args.value("import-bluez") {
                let adapterDir = dir + "/" + store.directory.split(separator: "/").last.map(String.init)!
                let (bonds, problems) = BlueZImport.bonds(adapterDirectory: adapterDir)
                for p in problems { ctx.console.error("\(p)") }
                for b in bonds {
                    do throws(BondStoreError) { try store.save(b) } catch { throw CLIFailure("\(error)") }
                }
                ctx.console.out("imported \(bonds.count) bond\(bonds.count == 1 ? "" : "s") from \(adapterDir)")
                return
            }
            for b in store.allBonds() {
                ctx.console.out(ctx.globals.json ? json(b).text : line(b))
            }
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

    static func line(_ b: Bond) -> String {
        let id = b.identityAddress.map { "identity \($0.address)/\($0.type.isRandom ? "random" : "public")" } ?? "no identity"
        let level = b.longTermKey.map { Self.level(authenticated: $0.authenticated, secureConnections: $0.secureConnections) } ?? "no LTK"
        return "\(b.peer.address)/\(b.peer.type.isRandom ? "random" : "public")  \(id)  \(keys(b).joined(separator: " "))  \(level)  since \(date(b.created))"
    }

    static func json(_ b: Bond) -> JSONValue {
        .object([("address", .string("\(b.peer.address)")), ("identity", b.identityAddress.map { .string("\($0.address)") } ?? .null),
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
