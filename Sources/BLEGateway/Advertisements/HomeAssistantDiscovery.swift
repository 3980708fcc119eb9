import BLECore

/// Home Assistant MQTT discovery: one retained sensor config per value a device shows (RSSI,
/// and battery, temperature, humidity, pressure when decoded), on
/// `homeassistant/sensor/<GWID>_<ADDRESS>_<value>/config`, reading the device's own topic.
///
///     for m in HomeAssistantDiscovery.configs(for: peripheral, topics: topics) { await publisher.enqueue(m) }
public enum HomeAssistantDiscovery {
    /// (value key, unit, device class, template) for the values a sensor can show.
    static let sensors: [(key: String, unit: String, deviceClass: String, template: String)] = [
        ("rssi", "dBm", "signal_strength", "{{ value_json.rssi }}"),
        ("battery", "%", "battery", "{{ value_json.decoded.battery }}"),
        ("temperature", "°C", "temperature", "{{ value_json.decoded.temperature }}"),
        ("humidity", "%", "humidity", "{{ value_json.decoded.humidity }}"),
        ("pressure", "Pa", "pressure", "{{ value_json.decoded.pressure }}"),
    ]

    /// The value keys `p` has: "rssi" always, the decoded scalars when present.
    static func keys(_ p: DiscoveredPeripheral) -> [String] {
        let decoded = Set(KnownFormats.decode(p.advertisingData).map(\.0))
        return sensors.map(\.key).filter { $0 == "rssi" || decoded.contains($0) }
    }

    /// The retained discovery messages for `p`'s values.
    public static func configs(for p: DiscoveredPeripheral, topics: GatewayTopics) -> [MQTTMessage] {
        let compact = GatewayTopics.compact(p.address.address)
        let name = p.advertisingData.localName ?? p.address.address.description
        let have = Set(keys(p))
        return sensors.filter { have.contains($0.key) }.map { s in
            let id = "\(topics.gatewayID)_\(compact)_\(s.key)"
            let payload = JSONValue.object([
                ("name", .string("\(name) \(s.key)")),
                ("unique_id", .string(id)),
                ("state_topic", .string(topics.device(p.address.address))),
                ("value_template", .string(s.template)),
                ("unit_of_measurement", .string(s.unit)),
                ("device_class", .string(s.deviceClass)),
                ("state_class", .string("measurement")),
                ("availability_topic", .string(topics.status)),
                ("device", .object([
                    ("identifiers", .array([.string("ble_\(compact)")])),
                    ("connections", .array([.array([.string("bluetooth"), .string(p.address.address.description)])])),
                    ("name", .string(name)),
                    ("via_device", .string("ble-gateway-\(topics.gatewayID)")),
                ])),
            ])
            return MQTTMessage(topic: "homeassistant/sensor/\(id)/config", payload: payload.bytes, qos: .atLeastOnce, retain: true)
        }
    }
}
