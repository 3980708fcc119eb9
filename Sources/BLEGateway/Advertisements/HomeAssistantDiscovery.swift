import BLECore
import BLESensors
import BLEWire

/// Home Assistant MQTT discovery: one retained config per value a device shows (its RSSI and every
/// decoded value that ``SensorKinds`` names), on `homeassistant/<component>/ble_<ADDRESS>/<key>/config`.
/// Nothing in a config depends on the gateway, so several gateways that hear one sensor publish
/// the same configs and Home Assistant shows it once. The state topic matches every gateway's
/// device topic. A value expires (`expire_after`) three publish intervals after the last message,
/// and `availability` lists the status topics (`online`/`offline`) of the gateways that feed it:
/// with several, any one online keeps it available (`availability_mode: any`). Every gateway of a
/// fleet passes the same sorted list, so their configs stay equal.
///
///     for m in HomeAssistantDiscovery.configs(for: device, topics: topics) { await publisher.enqueue(m) }
public enum HomeAssistantDiscovery {
    /// What a config is made from: the device, what it decoded, and how often it is published.
    ///
    ///     let device = HomeAssistantDiscovery.Device(address: a, name: "Env", decoding: d, publishInterval: .seconds(10))
    public struct Device: Sendable {
        public var address: BluetoothAddress
        public var name: String?
        public var decoding: SensorDecoding
        /// How often an unchanged device is published: values expire after three intervals.
        public var publishInterval: Duration

        public init(address: BluetoothAddress, name: String?, decoding: SensorDecoding, publishInterval: Duration) {
            self.address = address
            self.name = name
            self.decoding = decoding
            self.publishInterval = publishInterval
        }
    }

    /// The entity keys of a device: `rssi`, then its decoded keys that have a ``SensorKind``.
    public static func keys(_ decoding: SensorDecoding) -> [String] {
        ["rssi"] + decoding.values.map(\.key).filter { SensorKinds.kind(for: $0) != nil }
    }

    /// The retained discovery messages for `keys` (all of the device's by default); `availability`
    /// is the status topics of the gateways that publish the device (none: `expire_after` alone).
    public static func configs(for device: Device, keys: [String]? = nil, topics: GatewayTopics, availability: [String] = []) -> [MQTTMessage] {
        let compact = GatewayTopics.compact(device.address)
        let wanted = keys ?? Self.keys(device.decoding)
        return wanted.compactMap { key in
            guard let kind = key == "rssi" ? SensorKind("signal_strength", .sensor, "signal_strength", "dBm") : SensorKinds.kind(for: key) else { return nil }
            let payload = JSONValue.object(pairs(key: key, kind: kind, device: device, compact: compact, topics: topics, availability: availability))
            return MQTTMessage(topic: "homeassistant/\(kind.component.rawValue)/ble_\(compact)/\(key)/config",
                               payload: payload.bytes, qos: .atLeastOnce, retain: true)
        }
    }

    static func pairs(key: String, kind: SensorKind, device: Device, compact: String, topics: GatewayTopics, availability: [String]) -> [(String, JSONValue)] {
        let value = key == "rssi" ? "value_json.rssi" : "value_json.decoded.\(key)"
        var p: [(String, JSONValue)] = [
            ("name", .string(entityName(key))),
            ("unique_id", .string("ble_\(compact)_\(key)")),
            ("default_entity_id", .string("\(kind.component.rawValue).ble_\(compact.lowercased())_\(key)")),
            ("state_topic", .string("\(topics.prefix)/+/devices/\(compact)")),
        ]
        switch kind.component {
        case .sensor:
            p.append(("value_template", .string("{{ \(value) }}")))
        case .binarySensor:
            p.append(("value_template", .string("{{ 'ON' if \(value) else 'OFF' }}")))
        case .event:
            p.append(("event_types", .array(kind.eventTypes.map { .string($0) })))
            p.append(("value_template", .string(
                "{% if value_json.decoded is defined and value_json.decoded.\(key) is defined %}{\"event_type\":\"{{ value_json.decoded.\(key) }}\"}{% endif %}")))
        }
        if let unit = kind.unit { p.append(("unit_of_measurement", .string(unit))) }
        if let deviceClass = kind.deviceClass { p.append(("device_class", .string(deviceClass))) }
        if let stateClass = Self.stateClass(of: kind) { p.append(("state_class", .string(stateClass))) }
        if kind.component != .event && !device.decoding.triggerBased {
            let seconds = device.publishInterval.components.seconds * 3
            p.append(("expire_after", .int(Int(max(1, seconds)))))
        }
        var identity: [(String, JSONValue)] = [
            ("identifiers", .array([.string("ble_\(compact)")])),
            ("connections", .array([.array([.string("bluetooth"), .string(device.address.description)])])),
            ("name", .string(device.name ?? device.decoding.model.map { "\($0) \(compact.suffix(4))" } ?? device.address.description)),
        ]
        if let brand = device.decoding.brand { identity.append(("manufacturer", .string(brand))) }
        if let model = device.decoding.model { identity.append(("model", .string(model))) }
        p.append(("device", .object(identity)))
        p.append(("origin", .object([("name", .string("swift-ble-host")), ("sw_version", .string(SwiftBLEHost.version))])))
        p += availabilityPairs(availability)
        return p
    }

    /// Home Assistant's state class for a value: `measurement` for readings, `total` for meters
    /// (energy, gas, water, volume: a sensor's counter may restart), none otherwise.
    static func stateClass(of kind: SensorKind) -> String? {
        if kind.isMeasurement { return "measurement" }
        switch kind.deviceClass {
        case "energy", "gas", "water", "volume": return "total"
        default: return nil
        }
    }

    /// `temperature_probe_2` → "Temperature probe 2": the value's name, without the device's.
    static func entityName(_ key: String) -> String {
        if key == "rssi" { return "RSSI" }
        let words = String(key.map { $0 == "_" ? " " : $0 })
        return words.prefix(1).uppercased() + words.dropFirst()
    }
}
