import BLECore
import BLEWire

/// What one sensor format decoded from one advertisement.
///
///     if let reading = try BTHome.decode(ad, keys: keys) { print(reading.values) }
public struct SensorReading: Sendable, Hashable {
    /// The format that decoded it ("BTHome", "Xiaomi", "Govee", ...).
    public var format: String
    /// The maker and the model, where the format says.
    public var brand: String?
    public var model: String?
    /// The decoded values in order, keys in Home Assistant's snake_case device-class names
    /// (`temperature`, `humidity`, `battery`, ...); a key seen more than once is numbered from 1
    /// (`temperature_1`, `temperature_2`) by ``SensorValues``.
    public var values: [(key: String, value: JSONValue)]
    /// The payload was encrypted (decrypted or not).
    public var encrypted: Bool
    /// Why no values could be given (a missing or wrong key, a replayed counter, a downgrade).
    public var refusal: String?
    /// The packet id or encryption counter that identifies this payload, for dropping repeats.
    public var packetID: UInt64?
    /// The device advertises only when something happens (BTHome's trigger-based flag): its
    /// values do not expire between advertisements.
    public var triggerBased = false

    public init(format: String, brand: String? = nil, model: String? = nil, values: [(key: String, value: JSONValue)] = [],
                encrypted: Bool = false, refusal: String? = nil, packetID: UInt64? = nil) {
        self.format = format
        self.brand = brand
        self.model = model
        self.values = values
        self.encrypted = encrypted
        self.refusal = refusal
        self.packetID = packetID
    }

    public static func == (a: SensorReading, b: SensorReading) -> Bool {
        a.format == b.format && a.brand == b.brand && a.model == b.model && a.encrypted == b.encrypted
            && a.refusal == b.refusal && a.packetID == b.packetID && a.triggerBased == b.triggerBased
            && a.values.map(\.key) == b.values.map(\.key) && a.values.map(\.value) == b.values.map(\.value)
    }

    public func hash(into h: inout Hasher) {
        h.combine(format)
        h.combine(packetID)
        for (k, v) in values { h.combine(k); h.combine(v) }
    }

    /// The value for `key`, if decoded.
    public subscript(key: String) -> JSONValue? { values.first { $0.key == key }?.value }
}

/// Collects decoded values in order and numbers repeated keys from 1, as bthome-ble does:
/// two `temperature` values become `temperature_1` and `temperature_2`.
///
///     var v = SensorValues(); v.append("temperature", .double(21.5)); let pairs = v.pairs
public struct SensorValues: Sendable {
    private var entries: [(key: String, value: JSONValue)] = []

    public init() {}

    public mutating func append(_ key: String, _ value: JSONValue) { entries.append((key, value)) }

    public var isEmpty: Bool { entries.isEmpty }

    /// The values, repeated keys numbered `key_1`, `key_2`, ... in order of appearance.
    public var pairs: [(key: String, value: JSONValue)] {
        var counts: [String: Int] = [:]
        for e in entries { counts[e.key, default: 0] += 1 }
        var seen: [String: Int] = [:]
        return entries.map { e in
            guard counts[e.key, default: 0] > 1 else { return e }
            let n = seen[e.key, default: 0] + 1
            seen[e.key] = n
            return ("\(e.key)_\(n)", e.value)
        }
    }
}
