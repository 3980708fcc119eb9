import BLECore
import GATTClient
import SMP
import BLEWire

/// The configured links through `Restoration`: the config says which devices to hold and
/// what to subscribe to; the restoration store under the state directory keeps what the config
/// cannot (each subscription's handles, the peer's Database Hash, whether the CCCD was written
/// on an encrypted link). The gateway's own background connections (BackgroundLinks.swift)
/// make the links; each is handed to `Restoration.adopt`, which raises it to the device's
/// security and subscribes the stored subscriptions again before the gateway serves it.
extension Gateway {
    /// The gateway's restoration: its store is `<directory>/links`; bonds raise security.
    static func restoration(central: Central, directory: String, cache: GATTCache, bonds: (any BondStore)?) -> Restoration {
        Restoration(central: central, store: RestorationStore(identifier: "links", directory: directory), cache: cache,
                    security: { link in link.securityRaiser(store: bonds) })
    }

    /// Forgets the stored links of devices the config no longer has (in a task of its own: the
    /// store's file I/O does not hold the caller).
    func forgetUnconfiguredLinks() {
        guard let restoration else { return }
        let configured = Set(config.devices.map(\.address))
        let logger = central.options.logger
        Task {
            do {
                for stored in try await restoration.storedLinks() where !configured.contains(stored.peer) {
                    try await restoration.forget(stored.peer)
                }
            } catch {
                logger.log(.warning, "restoration store: \(error)")
            }
        }
    }

    /// As with the GATT cache, a state directory that cannot be written costs only what it
    /// keeps: after an I/O failure of the store, links are held without it (the link that met
    /// it is tried again with the device's backoff).
    func restorationFailed(_ error: RestorationError) {
        switch error {
        case .io, .unsafeDirectory:
            guard !restorationUnusable else { return }
            restorationUnusable = true
            central.options.logger.log(.warning, "\(error); configured links are held without the restoration store until the gateway restarts")
        default:
            break
        }
    }

    /// The device's new link set up by the restoration: raised to the device's security, its
    /// stored subscriptions subscribed again (those the config dropped are forgotten).
    func holdRestored(_ connection: Connection, _ device: GatewayConfig.Device, _ restoration: Restoration) async throws(CommandError) -> Link {
        let restored: RestoredLink
        do { restored = try await restoration.adopt(connection, security: device.security ?? .none) } catch {
            restorationFailed(error)
            throw CommandError("restoration", error.description)
        }
        let configured = Set(device.subscribe.map(\.identifier))
        for characteristic in restored.streams.keys where !configured.contains(characteristic) {
            try? await restoration.forget(characteristic, of: device.address)
        }
        let link = Link(connection: connection, peripheral: restored.peripheral, restored: restored)
        links[device.address] = link
        return link
    }
}
