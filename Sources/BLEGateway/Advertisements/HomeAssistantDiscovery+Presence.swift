import BLECore
import BLEWire

extension HomeAssistantDiscovery {
    /// The one presence entity of a fleet device: a sensor showing the nearest gateway's id, or
    /// `away`, from `ble/<fleet>/presence/<ADDRESS>`. Every gateway of the fleet publishes the same
    /// retained config, on `homeassistant/sensor/ble_<ADDRESS>/presence/config`; `availability`:
    /// the status topics of the fleet's gateways (any one online keeps it available).
    ///
    ///     await publisher.enqueue(HomeAssistantDiscovery.presenceConfig(address, topics: fleetTopics, availability: topics))
    public static func presenceConfig(_ address: BluetoothAddress, topics: FleetTopics, availability: [String] = []) -> MQTTMessage {
        let compact = GatewayTopics.compact(address)
        let payload = JSONValue.object([
            ("name", .string("Presence")),
            ("unique_id", .string("ble_\(compact)_presence")),
            ("default_entity_id", .string("sensor.ble_\(compact.lowercased())_presence")),
            ("state_topic", .string(topics.presence(address))),
            ("value_template", .string("{{ value_json.nearest if value_json.state == 'present' else 'away' }}")),
            ("icon", .string("mdi:map-marker")),
            ("device", .object([("identifiers", .array([.string("ble_\(compact)")])),
                                ("connections", .array([.array([.string("bluetooth"), .string(address.description)])]))])),
            ("origin", .object([("name", .string("swift-ble-host")), ("sw_version", .string(SwiftBLEHost.version))])),
        ] + availabilityPairs(availability))
        return MQTTMessage(topic: "homeassistant/sensor/ble_\(compact)/presence/config", payload: payload.bytes, qos: .atLeastOnce, retain: true)
    }
}

extension HomeAssistantDiscovery {
    /// `availability` with one status topic per gateway that feeds the entity (`online` and
    /// `offline` are Home Assistant's default payloads), and `availability_mode` `any` when there
    /// are several; nothing for none.
    static func availabilityPairs(_ availability: [String]) -> [(String, JSONValue)] {
        guard !availability.isEmpty else { return [] }
        var p: [(String, JSONValue)] = [("availability", .array(availability.map { .object([("topic", .string($0))]) }))]
        if availability.count > 1 { p.append(("availability_mode", .string("any"))) }
        return p
    }
}
