import BLECore
import SMP

/// Bonded devices that advertise with resolvable private addresses (Vol 6, Part B, 1.3.2.2)
/// keep one name in the CLI: their identity address. The bonds' IRKs go into the
/// controller's resolving list where it has LL Privacy (Vol 6, Part B, 6.1), and resolve
/// addresses on the host as well (ah, Vol 3, Part H, 2.2.2), for controllers that have no
/// list or do not resolve with it.
enum BondedAddresses {
    /// Turns address resolution on for `central` from `store`; a controller that refuses the
    /// resolving list is logged and left to the host's resolution.
    static func enable(_ ctx: CommandContext, central: Central, store: any BondStore) async {
        await central.setAddressResolver(store.addressResolver)
        let entries = store.resolvingListEntries
        guard !entries.isEmpty else { return }
        do {
            let load = try await central.loadResolvingList(entries)
            let more = load.notLoaded.isEmpty ? "" : ", \(load.notLoaded.count) more resolved by the host (the list is full)"
            ctx.logger.log(.info, load.isEnabled ? "resolving list: \(load.loaded.count) bonded device(s) with an IRK\(more)" : "the controller has no LL Privacy: the host resolves private addresses")
        } catch {
            ctx.logger.log(.warning, "the controller refused the resolving list (\(error)); the host resolves private addresses")
        }
    }

    /// The bond store for `central`, with resolution turned on; nil (logged) when the bond
    /// directory cannot be opened, so a scan still runs without it.
    static func enableIfPossible(_ ctx: CommandContext, central: Central) async -> FileBondStore? {
        do {
            let store = try await BondsCommand.store(ctx, central: central)
            await enable(ctx, central: central, store: store)
            return store
        } catch {
            ctx.logger.log(.warning, "no address resolution: \(error)")
            return nil
        }
    }
}
