import BLECore
import BLEWire

extension HomeAssistantDiscovery {
    /// The one presence entity of a fleet device: a sensor showing the nearest gateway's id, or
    /// `away`, from `ble/<fleet>/presence/<ADDRESS>`. Every gateway of the fleet publishes the same
    /// retained config, on `homeassistant/sensor/ble_<ADDRESS>/presence/config`.
    ///
    ///     await publisher.enqueue(HomeAssistantDiscovery.presenceConfig(address, topics: fleetTopics))
    public static func presenceConfig(_ address: BluetoothAddress, topics: FleetTopics) -> MQTTMessage {
        let compact = GatewayTopics.compact(address)
        let payload = JSONValue.object([
            ("name", .string("Presence")),
            ("unique_id", .string("ble_\(compact)_presence")),
            ("object_id", .string("ble_\(compact.lowercased())_presence")),
            ("state_topic", .string(topics.presence(address))),
            ("value_template", .string("{{ value_json.nearest if value_json.state == 'present' else 'away' }}")),
            ("icon", .string("mdi:map-marker")),
            ("device", .object([("identifiers", .array([.string("ble_\(compact)")])),
                                ("connections", .array([.array([.string("bluetooth"), .string(address.description)])]))])),
            ("origin", .object([("name", .string("swift-ble-host")), ("sw_version", .string(SwiftBLEHost.version))])),
        ])
        return MQTTMessage(topic: "homeassistant/sensor/ble_\(compact)/presence/config", payload: payload.bytes, qos: .atLeastOnce, retain: true)
    }
}
