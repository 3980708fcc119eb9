import BLEWire
import BLECore
import GATTClient
extension Central {
    /// Scans for devices advertising any of `services` (in a service UUID list or as service
    /// data): BLESwift's form of `scan(filter: ScanFilter(services:), options:)`.
    ///
    ///     for try await event in await central.scan(services: [ServiceIdentifier(uuid: "180D")]) { ... }
    public func scan(services: [ServiceIdentifier], options: ScanOptions = ScanOptions()) -> ScanStream {
        scan(filter: ScanFilter(services: services.map(\.uuid)), options: options)
    }

    /// Connects to a peripheral found by a scan and returns it ready for GATT calls (the link
    /// is up and its ATT channel open; services are discovered on first use). With a
    /// reconnect policy, an unexpected drop is followed by new attempts and the peripheral
    /// carries on: its notification streams resume once the link is back.
    ///
    ///     let peripheral = try await central.connect(identifier, reconnect: .always(maxAttempts: 5))
    public func connect(
        _ peripheral: PeripheralIdentifier, timeout: Duration = .seconds(15), reconnect: ReconnectPolicy = .never,
        cache: GATTCache? = nil
    ) async throws(GATTError) -> Peripheral {
        try await self.peripheral(peripheral.address, timeout: timeout, reconnect: reconnect, cache: cache)
    }
}
