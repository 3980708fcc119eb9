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

    /// The outcome of looking up the key of an encrypted payload.
    enum Lookup {
        case key([UInt8])
        /// No key, or one that is not 16 bytes: the reading's refusal, naming the device.
        case refused(String)
    }

    /// The 16-byte key of `mac` (the address in the payload) or else of `advertiser`, for
    /// BTHome and MiBeacon alike; `noun` names it in the refusal ("key", "bindkey").
    ///
    ///     guard case .key(let key) = keys.lookup(mac, advertiser: ad.address.address, noun: "key") else { ... }
    func lookup(_ mac: BluetoothAddress, advertiser: BluetoothAddress, noun: String) -> Lookup {
        guard let key = keys[mac] ?? keys[advertiser] else {
            return .refused("encrypted; no key for \(mac): add \(noun == "key" ? "one" : "its \(noun)") under \"keys\" in the config")
        }
        guard key.count == 16 else { return .refused("encrypted; the key for \(mac) has \(key.count) bytes, needs 16") }
        return .key(key)
    }
}
