import BLECore
import BLEWire

/// One advertising format of a family of sensors. `decode` is a pure function: it returns nil when
/// the advertisement does not carry this format, a reading when it does, and throws
/// ``SensorDecodeError`` when it carries it malformed.
///
///     if let r = try Ruuvi.decode(ad, keys: SensorKeys()) { ... }
public protocol SensorFormat: Sendable {
    static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading?
}

/// Per-device encryption keys (BTHome and MiBeacon bindkeys), 16 bytes each, by address.
/// Keys never print (SensorKeys+Description.swift).
public struct SensorKeys: Sendable, Hashable {
    public var keys: [BluetoothAddress: [UInt8]]

    public init(_ keys: [BluetoothAddress: [UInt8]] = [:]) { self.keys = keys }

    public subscript(address: BluetoothAddress) -> [UInt8]? { keys[address] }
}
