import BLECore
import GATTClient

/// The GATT cache of `ble read`, `ble write` and `ble inspect`: a device's services,
/// characteristics and descriptors are kept in `$BLE_GATT_CACHE_DIR` (default
/// `~/.local/state/swift-ble-host/gatt-cache`) when it has a stable address and a Database
/// Hash, so the next command that connects to it reads the hash and skips discovery.
/// `--no-cache` discovers over the air and writes nothing.
///
///     let cache = GATTCacheOption.cache(ctx, central: central)
enum GATTCacheOption {
    static let option = OptionSpec.flag("no-cache", nil, "discover the device's attributes over the air, without the GATT cache ($BLE_GATT_CACHE_DIR, default ~/.local/state/swift-ble-host/gatt-cache)")
    static let details = ["The device's services, characteristics and descriptors are cached on disk when it has a stable address and a Database Hash (0x2B2A): the next command reads the hash and, when it is unchanged, skips discovery. --no-cache discovers over the air and leaves the cache as it is."]

    /// The cache for this command, nil with `--no-cache`. Problems with its files are warnings
    /// on stderr; the command goes on without them.
    static func cache(_ ctx: CommandContext, central: Central) -> GATTCache? {
        guard !ctx.args.has("no-cache") else { return nil }
        let console = ctx.console
        return GATTCache(central: central, directory: GATTCache.defaultDirectory) { console.error("warning: \($0)") }
    }

    /// Waits (at most 2 s) for the cache's files to be written before the command exits.
    static func flush(_ cache: GATTCache?, _ ctx: CommandContext) async {
        guard let cache else { return }
        do throws(GATTCacheError) { try await cache.flush(timeout: .seconds(2)) } catch { ctx.console.error("warning: \(error)") }
    }
}
