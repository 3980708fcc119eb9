import BLECore
import BLEWire

extension GatewayConfig {
    /// The fleet a gateway belongs to: every gateway with the same `name` (and topic prefix)
    /// feeds one device topic per device and one presence per device, `ble/<name>/...`.
    ///
    ///     config.fleet = GatewayConfig.Fleet(name: "house", slots: 3, away: .seconds(60))
    public struct Fleet: Sendable, Hashable {
        /// The fleet's topic level (`ble/<name>/devices/...`).
        public var name: String
        /// Connections this gateway may hold for the fleet (published as its free slots).
        public var slots: Int
        /// A device no gateway heard for this long is `away`.
        public var away: Duration
        /// How long a gateway waits before it claims a free device: after the device is first
        /// heard (so every gateway's report is in), and once more per better-placed gateway that
        /// did not claim it.
        public var claimDelay: Duration
        /// How long a gateway cut off from the broker keeps its held links before it drops them.
        public var grace: Duration

        public init(name: String, slots: Int = 3, away: Duration = .seconds(60), claimDelay: Duration = .seconds(1),
                    grace: Duration = .seconds(60)) {
            self.name = name
            self.slots = slots
            self.away = away
            self.claimDelay = claimDelay
            self.grace = grace
        }
    }

    /// Checks `fleet`: a name fit for a topic level and other than the gateway id, slots not
    /// negative, `away` more than 0.
    func validateFleet() throws(ConfigError) {
        guard let fleet else { return }
        try Self.checkTopicLevel(fleet.name, key: "fleet.name")
        if fleet.name == id { throw ConfigError(key: "fleet.name", "\"\(fleet.name)\" is the gateway id too; give the fleet a name of its own") }
        if fleet.slots < 0 || fleet.slots > 64 { throw ConfigError(key: "fleet.slots", "must be from 0 to 64, got \(fleet.slots)") }
        if fleet.away <= .zero { throw ConfigError(key: "fleet.awaySeconds", "must be more than 0") }
        if fleet.claimDelay < .milliseconds(100) || fleet.claimDelay > .seconds(60) {
            throw ConfigError(key: "fleet.claimDelaySeconds", "must be from 0.1 to 60 seconds, got \(Self.secondsText(fleet.claimDelay))")
        }
        if fleet.grace < .zero || fleet.grace > .seconds(86_400) {
            throw ConfigError(key: "fleet.graceSeconds", "must be from 0 to 86400 seconds, got \(Self.secondsText(fleet.grace))")
        }
    }

    /// The fleet's topics, when the gateway is in one.
    public var fleetTopics: FleetTopics? {
        fleet.map { FleetTopics(prefix: topicPrefix, fleet: $0.name, gatewayID: id ?? "") }
    }
}

/// Topic names under `<prefix>/<fleet>/`, shared by every gateway of the fleet.
///
///     let t = FleetTopics(prefix: "ble", fleet: "house", gatewayID: "gw1"); t.device(address)
public struct FleetTopics: Sendable, Hashable {
    public var prefix: String
    public var fleet: String
    public var gatewayID: String

    public init(prefix: String = "ble", fleet: String, gatewayID: String) {
        self.prefix = prefix
        self.fleet = fleet
        self.gatewayID = gatewayID
    }

    var base: String { "\(prefix)/\(fleet)" }
    /// `ble/house/devices/C01122334455`: the one message stream of a device, from any gateway.
    public func device(_ address: BluetoothAddress) -> String { "\(base)/devices/\(GatewayTopics.compact(address))" }
    /// `ble/house/presence/C01122334455`: retained, nearest gateway or `away`.
    public func presence(_ address: BluetoothAddress) -> String { "\(base)/presence/\(GatewayTopics.compact(address))" }
    /// `ble/house/presence/C01122334455/gw1`: the smoothed RSSI one gateway hears.
    public func presence(_ address: BluetoothAddress, gateway: String) -> String { "\(presence(address))/\(gateway)" }
    /// `ble/house/gateways/gw1/slots`: retained, the connections this gateway can still take.
    public var slots: String { "\(base)/gateways/\(gatewayID)/slots" }
    /// `ble/house/claims/C01122334455`: retained, the gateway that holds the device (FleetClaims).
    public func claim(_ address: BluetoothAddress) -> String { "\(base)/claims/\(GatewayTopics.compact(address))" }
    /// `ble/house/commands`: a command for whichever gateway holds its device.
    public var commands: String { "\(base)/commands" }
    /// `ble/house/responses/<id>`: the answer to a command on `commands`, from one gateway.
    public func response(_ id: String) -> String { "\(base)/responses/\(id)" }
    /// `ble/GWID/status` of another gateway (`online`, or `offline` from it or its last will).
    func status(of gateway: String) -> String { "\(prefix)/\(gateway)/status" }
    /// `ble/house/packets/C01122334455`: retained, `{"gateway":"gw1","packet":"<16 hex digits>"}`,
    /// the packet of the device the fleet published last and the gateway that did (FleetFollowing).
    public func packets(_ address: BluetoothAddress) -> String { "\(base)/packets/\(GatewayTopics.compact(address))" }
    /// What every gateway of the fleet subscribes to for the whole of its session: the claims,
    /// the gateways' slots and statuses, the fleet's commands. A device's own topics are
    /// followed only while the gateway hears it (``subscriptions(of:)``).
    public var subscriptions: [String] {
        ["\(base)/claims/+", "\(base)/gateways/+/slots", "\(prefix)/+/status", commands]
    }
    /// What a gateway subscribes to while it hears `address` (or holds it in its config): the
    /// device's last packet and its presence, the aggregate and every gateway's report.
    public func subscriptions(of address: BluetoothAddress) -> [String] {
        [packets(address), presence(address) + "/#"]
    }
}
