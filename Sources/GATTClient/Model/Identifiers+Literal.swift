import BLEWire
extension BluetoothUUID {
    /// The UUID a string literal names; a literal that is not one stops the program with a
    /// message (a mistake in the source, like an invalid regex literal). Text from users or
    /// files goes through the throwing initialisers instead.
    static func literal(_ text: StaticString) -> BluetoothUUID {
        let string = text.description
        guard let uuid = BluetoothUUID(string) else {
            preconditionFailure("\"\(string)\" is not a Bluetooth UUID literal: write 4 or 8 hex digits (\"180D\") or the 36-character form")
        }
        return uuid
    }
}

extension ServiceIdentifier {
    /// A service named by a UUID literal, without `try` (an invalid literal stops the program).
    ///
    ///     let heartRate = ServiceIdentifier(uuid: "180D")
    public init(uuid literal: StaticString) { self.init(uuid: BluetoothUUID.literal(literal)) }
}

extension CharacteristicIdentifier {
    /// A characteristic named by a UUID literal, without `try` (an invalid literal stops the program).
    ///
    ///     let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRate)
    public init(uuid literal: StaticString, service: ServiceIdentifier) {
        self.init(uuid: BluetoothUUID.literal(literal), service: service)
    }
}

extension DescriptorIdentifier {
    /// A descriptor named by a UUID literal, without `try` (an invalid literal stops the program).
    ///
    ///     let cccd = DescriptorIdentifier(uuid: "2902", characteristic: measurement)
    public init(uuid literal: StaticString, characteristic: CharacteristicIdentifier) {
        self.init(uuid: BluetoothUUID.literal(literal), characteristic: characteristic)
    }
}
