import GATTClient
import BLEWire
import GATTServer

extension GATTDatabase.Service {
    /// A primary service named the way an application names it.
    ///
    ///     .init(heartRate, characteristics: [.init(measurement, properties: [.notify])])
    public init(_ id: ServiceIdentifier, characteristics: [GATTDatabase.Characteristic]) {
        self.init(uuid: id.uuid, characteristics: characteristics)
    }
}

extension GATTDatabase.Characteristic {
    /// A characteristic named the way an application names it, with its first value.
    ///
    ///     .init(batteryLevel, properties: [.read, .notify], value: [100])
    public init(_ id: CharacteristicIdentifier, properties: GATTCharacteristicProperties, value: [UInt8] = []) {
        self.init(uuid: id.uuid, properties: properties, value: value)
    }
}

extension GATTServer {
    /// On the server's queue: some link enabled notifications or indications of `uuid`.
    func hasSubscriberOnQueue(_ uuid: BluetoothUUID) -> Bool {
        guard let cccd = cccdHandle(of: uuid) else { return false }
        return links.values.contains { ($0.cccd[cccd] ?? 0) != 0 }
    }
}
