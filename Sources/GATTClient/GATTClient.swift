/// GATTClient: the Generic Attribute Profile client (Core Spec 5.4, Vol 3, Part G) over an
/// ATT bearer.
///
/// - `GATTProcedures`: each client procedure of section 4 on one `ATTBearer`.
/// - `Peripheral`: the application's view of a peer (discovery on demand, reads, writes,
///   notifications), addressed by `ServiceIdentifier` / `CharacteristicIdentifier`.
/// - `GATTCache`: discovered databases shared across connections, per peer identity.
/// - `GATTDecodable` / `GATTEncodable`: typed values, with the common SIG characteristics.
///
///     let peripheral = try await central.peripheral(address, cache: cache)
///     let level = try await peripheral.read(battery, as: BatteryLevel.self)
import ATT
