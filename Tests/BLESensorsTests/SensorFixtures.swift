import BLECore
import BLESensors
import BLEWire

/// Builds advertisements from the hex of published test payloads.
enum Fixture {
    /// An advertisement carrying `hex` as the service data of `uuid16`, from `address` (public).
    static func serviceData(_ uuid16: UInt16, _ hex: String, address: String = "A4:C1:38:8D:18:B2") -> SensorAdvertisement {
        let data = [UInt8](hex: hex) ?? []
        return SensorAdvertisement(address: LEAddress(BluetoothAddress(address) ?? .zero, type: .public),
                                   data: AdvertisingData([.serviceData16(uuid: uuid16, data: data)]))
    }

    static func keys(_ address: String, _ hex: String) -> SensorKeys {
        SensorKeys([BluetoothAddress(address) ?? .zero: [UInt8](hex: hex) ?? []])
    }

    /// The reading's values as one JSON object's text.
    static func text(_ r: SensorReading?) -> String {
        JSONValue.object((r?.values ?? []).map { ($0.key, $0.value) }).text
    }
}
