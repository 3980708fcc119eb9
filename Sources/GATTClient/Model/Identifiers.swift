import BLEWire

/// Names a service by UUID, the way an application refers to it.
///
///     let heartRate = ServiceIdentifier(uuid: "180D")
public struct ServiceIdentifier: Hashable, Sendable, CustomStringConvertible {
    public let uuid: BluetoothUUID
    public init(uuid: BluetoothUUID) { self.uuid = uuid }
    /// Parses `"180D"`, `"0000180D"` or the 36-character form; throws `.invalidUUID` otherwise.
    /// (A literal takes the non-throwing `init(uuid: StaticString)`.)
    @_disfavoredOverload
    public init(uuid text: some StringProtocol) throws(GATTError) {
        let string = String(text)
        guard let uuid = BluetoothUUID(string) else { throw .invalidUUID(string) }
        self.uuid = uuid
    }
    /// "Heart Rate (180D)".
    public var description: String { uuid.gattDisplayName }
}

/// Names a characteristic by UUID within a service.
///
///     let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRate)
public struct CharacteristicIdentifier: Hashable, Sendable, CustomStringConvertible {
    public let uuid: BluetoothUUID
    public let service: ServiceIdentifier
    public init(uuid: BluetoothUUID, service: ServiceIdentifier) { self.uuid = uuid; self.service = service }
    /// Parses the UUID like `ServiceIdentifier(uuid:)`.
    @_disfavoredOverload
    public init(uuid text: some StringProtocol, service: ServiceIdentifier) throws(GATTError) {
        let string = String(text)
        guard let uuid = BluetoothUUID(string) else { throw .invalidUUID(string) }
        self.init(uuid: uuid, service: service)
    }
    /// "Heart Rate Measurement (2A37)".
    public var description: String { uuid.gattDisplayName }
}

/// Names a descriptor by UUID on a characteristic.
///
///     let userDescription = DescriptorIdentifier(uuid: GATTAttributeType.userDescription, characteristic: measurement)
public struct DescriptorIdentifier: Hashable, Sendable, CustomStringConvertible {
    public let uuid: BluetoothUUID
    public let characteristic: CharacteristicIdentifier
    public init(uuid: BluetoothUUID, characteristic: CharacteristicIdentifier) { self.uuid = uuid; self.characteristic = characteristic }
    @_disfavoredOverload
    public init(uuid text: some StringProtocol, characteristic: CharacteristicIdentifier) throws(GATTError) {
        let string = String(text)
        guard let uuid = BluetoothUUID(string) else { throw .invalidUUID(string) }
        self.init(uuid: uuid, characteristic: characteristic)
    }
    /// "Client Characteristic Configuration (2902) of Heart Rate Measurement (2A37)".
    public var description: String { "\(uuid.gattDisplayName) of \(characteristic)" }
}
