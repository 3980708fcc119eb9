import BLECore
import GATTClient
import BLEWire

/// Connects to DEVICE (resolving a name by scanning), opens its GATT client, runs `body`,
/// then disconnects and closes the central whatever happened. A stored bond encrypts the
/// link first, and `--security` raises it before the first request (LinkSecurity). With
/// `signing` the bond must hold this side's CSRK; the link stays unencrypted (unless
/// `--security`) so that `Peripheral.writeSigned` signs. With `resumable` (a command that
/// runs until Ctrl-C) an adapter lost under `body` is reopened and `body` runs again on a new
/// link (`AdapterReopen`, unless `--no-reopen`).
func withPeripheral<T: Sendable>(_ ctx: CommandContext, signing: Bool = false, resumable: Bool = false,
                                 _ body: (Peripheral) async throws -> T) async throws -> T {
    let target = try DeviceResolver.parse(try ctx.positionals(["DEVICE"])[0])
    let scanTimeout = try DeviceArgument.scanTimeout(ctx)
    let required = try LinkSecurity.parse(ctx)
    let reopen = resumable && AdapterReopen.isOn(ctx)
    return try await withCentral(ctx, reopenable: reopen) { central in
        func session() async throws -> T {
            let security = try await LinkSecurity(ctx, required: required, central: central)
            let peer = try await DeviceResolver.resolve(target, central: central, scanTimeout: scanTimeout, console: ctx.console, bonds: security.store)
            if signing { try security.requireSigningKey(for: peer) }
            ctx.logger.log(.info, "connecting to \(peer)")
            let link = try await central.connect(peer, timeout: ctx.globals.timeoutDuration)
            let cache = GATTCacheOption.cache(ctx, central: central)
            do {
                try await security.apply(to: link, withBond: !signing)
                let peripheral = try await withTimeout(ctx.globals.timeoutDuration, "setting up GATT with \(peer)") {
                    try await Peripheral(connection: link, cache: cache)
                }
                await security.install(on: peripheral, link: link)
                if signing { await security.installSigner(on: peripheral, link: link) }
                let result = try await body(peripheral)
                await GATTCacheOption.flush(cache, ctx)
                try? await link.disconnect(timeout: .seconds(2))
                return result
            } catch {
                await GATTCacheOption.flush(cache, ctx)
                try? await link.disconnect(timeout: .seconds(2))
                throw LinkSecurity.advice(for: error)
            }
        }
        guard reopen else { return try await session() }
        return try await AdapterReopen.resuming(ctx, central: central, "connecting and subscribing again") { _ in try await session() }
    }
}

/// Finding characteristics by UUID, in one service or across all of them.
enum GATTLookup {
    /// The characteristic `uuid` (in `service` when given, else the first service that has it).
    static func characteristic(_ peripheral: Peripheral, uuid: BluetoothUUID, service: BluetoothUUID?) async throws -> (CharacteristicIdentifier, GATTCharacteristic) {
        let services = try await peripheral.services()
        var searched: [GATTService] = []
        for s in services where service == nil || s.uuid == service {
            searched.append(s)
            for c in try await peripheral.characteristics(of: s) where c.uuid == uuid {
                return (CharacteristicIdentifier(uuid: c.uuid, service: ServiceIdentifier(uuid: s.uuid)), c)
            }
        }
        if let service, searched.isEmpty {
            let list = services.map { "\($0.uuid)" }.joined(separator: ", ")
            throw CLIFailure("the device has no service \(service); it has \(list.isEmpty ? "none" : list) (see 'ble inspect')")
        }
        throw CLIFailure("the device has no characteristic \(uuid.gattDisplayName)\(service.map { " in service \($0)" } ?? ""); list them with 'ble inspect'")
    }

    /// JSON-and-scenario style property names ("read", "writeWithoutResponse").
    static func propertyNames(_ p: GATTCharacteristicProperties) -> [String] {
        let all: [(GATTCharacteristicProperties, String)] = [
            (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "writeWithoutResponse"), (.write, "write"),
            (.notify, "notify"), (.indicate, "indicate"), (.authenticatedSignedWrites, "authenticatedSignedWrites"),
            (.extendedProperties, "extendedProperties"),
        ]
        return all.filter { p.contains($0.0) }.map(\.1)
    }
}
