import BLECore
import BLEWire

/// Runs every registered format over an advertisement and keeps, per device, what replay and
/// downgrade checks need: the last encryption counter and packet id of each format, and whether
/// the device encrypts. It holds at most `capacity` devices (the oldest entry goes first).
/// A value type without locks: the gateway's advertisement loop and `ble adv` each own one.
///
///     var decoder = SensorDecoder(keys: config.keys)
///     let decoding = decoder.decode(SensorAdvertisement(address: p.address, data: p.advertisingData))
///     if !decoding.isRepeat { publish(decoding.object) }
public struct SensorDecoder: Sendable {
    /// The formats tried, in order: the standard ones, then the brands.
    public static let formats: [any SensorFormat.Type] = StandardFormats.all + BrandFormats.all
    /// Formats that can encrypt: an unencrypted payload from a device known to encrypt is refused.
    static let encryptingFormats: Set<String> = [BTHome.name, MiBeacon.name]
    /// Formats whose devices send their values in turns (a MiBeacon frame holds one or two
    /// objects): each reading carries the device's last value of every key seen so far.
    static let accumulatingFormats: Set<String> = [MiBeacon.name]

    /// Counters below this are a restart when ``acceptsCounterRestart`` is on (bthome-ble's bound).
    public static let counterRestartWindow: UInt64 = 100

    public var keys: SensorKeys
    /// Accept an encryption counter that went back below ``counterRestartWindow`` as the device
    /// restarting its counter (a battery change, or the counter wrapping) instead of refusing it
    /// as a replay. Off by default: a recorded payload of the device's first 100 could then be
    /// replayed once after a higher one.
    public var acceptsCounterRestart = false
    public let capacity: Int
    private var devices: [BluetoothAddress: DeviceState] = [:]
    private var order: [BluetoothAddress] = []
    private var orderStart = 0

    struct DeviceState {
        var counters: [String: UInt64] = [:]
        var packetIDs: [String: UInt64] = [:]
        var encrypts: Set<String> = []
        var values: [String: [(key: String, value: JSONValue)]] = [:]
    }

    public init(keys: SensorKeys = SensorKeys(), capacity: Int = 4096, acceptsCounterRestart: Bool = false) {
        self.keys = keys
        self.capacity = max(1, capacity)
        self.acceptsCounterRestart = acceptsCounterRestart
    }

    /// The number of devices whose state is kept.
    public var deviceCount: Int { devices.count }

    /// Every format's reading of `ad`, refusals applied.
    public mutating func decode(_ ad: SensorAdvertisement) -> SensorDecoding {
        var out = SensorDecoding()
        for format in Self.formats {
            do {
                guard let reading = try format.decode(ad, keys: keys) else { continue }
                out.readings.append(reading)
            } catch {
                out.errors.append(error)
            }
        }
        guard out.readings.contains(where: { $0.packetID != nil || Self.encryptingFormats.contains($0.format) || Self.accumulatingFormats.contains($0.format) })
        else { return out }
        let address = ad.address.address
        var state = devices[address] ?? DeviceState()
        var repeats = 0, identified = 0
        for i in out.readings.indices {
            let reading = out.readings[i]
            let format = reading.format
            if reading.encrypted {
                guard reading.refusal == nil, let counter = reading.packetID else { continue }
                identified += 1
                let restarted = acceptsCounterRestart && counter < Self.counterRestartWindow
                if let last = state.counters[format], counter <= last, counter == last || !restarted {
                    if counter == last {
                        repeats += 1
                    } else {
                        out.readings[i].values = []
                        out.readings[i].refusal = "encryption counter \(counter) from \(address) is below the last one, \(last) (replayed?)"
                    }
                    continue
                }
                state.counters[format] = counter
                state.encrypts.insert(format)
            } else {
                if Self.encryptingFormats.contains(format), !reading.values.isEmpty, state.encrypts.contains(format) || keys[address] != nil {
                    out.readings[i].values = []
                    out.readings[i].refusal = "unencrypted \(format) payload from \(address), which encrypts (downgrade refused)"
                    continue
                }
                guard let id = reading.packetID else { continue }
                identified += 1
                if state.packetIDs[format] == id { repeats += 1 }
                state.packetIDs[format] = id
            }
        }
        for i in out.readings.indices where out.readings[i].refusal == nil && Self.accumulatingFormats.contains(out.readings[i].format) {
            let format = out.readings[i].format
            var merged = state.values[format] ?? []
            for (key, value) in out.readings[i].values {
                if let at = merged.firstIndex(where: { $0.key == key }) { merged[at].value = value } else { merged.append((key, value)) }
            }
            state.values[format] = merged
            out.readings[i].values = merged
        }
        out.isRepeat = identified > 0 && repeats == identified
        store(state, for: address)
        return out
    }

    private mutating func store(_ state: DeviceState, for address: BluetoothAddress) {
        if devices.updateValue(state, forKey: address) != nil { return }
        order.append(address)
        while devices.count > capacity, orderStart < order.count {
            devices[order[orderStart]] = nil
            orderStart += 1
        }
        if orderStart > capacity {
            order.removeFirst(orderStart)
            orderStart = 0
        }
    }
}

/// What ``SensorDecoder`` made of one advertisement.
///
///     let message = JSONValue.object(decoder.decode(ad).object)   // {"temperature":25.06,...}
public struct SensorDecoding: Sendable {
    /// One reading per format that recognised the advertisement (refused ones included).
    public var readings: [SensorReading] = []
    /// Formats that recognised their data but found it malformed.
    public var errors: [SensorDecodeError] = []
    /// Every packet id or counter in it was seen last time from this device: already published.
    public var isRepeat = false

    public init() {}

    /// The decoded values of all readings, the first format's value winning a repeated key.
    public var values: [(key: String, value: JSONValue)] {
        var seen = Set<String>()
        var out: [(key: String, value: JSONValue)] = []
        for r in readings where r.refusal == nil {
            for v in r.values where seen.insert(v.key).inserted { out.append(v) }
        }
        return out
    }

    /// The maker and model named by the first reading that names them.
    public var brand: String? { readings.lazy.compactMap(\.brand).first }
    public var model: String? { readings.lazy.compactMap(\.model).first }
    /// The device advertises only when something happens.
    public var triggerBased: Bool { readings.contains(where: \.triggerBased) }

    /// The `decoded` object: the values, then `"encrypted": true` when a payload was encrypted
    /// and `"reason"` when one was refused or malformed. Empty when nothing was recognised.
    public var object: [(String, JSONValue)] {
        var pairs: [(String, JSONValue)] = values.map { ($0.key, $0.value) }
        if readings.contains(where: \.encrypted) { pairs.append(("encrypted", .bool(true))) }
        let reasons = readings.compactMap(\.refusal) + errors.map(\.description)
        if !reasons.isEmpty { pairs.append(("reason", .string(reasons.joined(separator: "; ")))) }
        return pairs
    }
}

extension SensorDecoding {
    /// Drops the event values (`button`, `dimmer`, `command`): for a packet whose events were already reported.
    public mutating func removeEvents() {
        for i in readings.indices {
            readings[i].values.removeAll { SensorKinds.kind(for: $0.key)?.component == .event }
        }
    }
}
