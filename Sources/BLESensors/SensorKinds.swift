/// What Home Assistant shows a decoded value as: its MQTT component, its device class and its
/// unit. Every format publishes its values in these units.
///
///     let kind = SensorKinds.kind(for: "temperature_probe_2")   // sensor, temperature, °C
public struct SensorKind: Sendable, Hashable {
    public enum Component: String, Sendable, Hashable {
        case sensor
        case binarySensor = "binary_sensor"
        case event
    }

    /// The key's base name (`temperature`, `temperature_probe`, `button`).
    public var key: String
    public var component: Component
    /// Home Assistant's device class (`carbon_dioxide` for `co2`), nil where it has none.
    public var deviceClass: String?
    /// Home Assistant's default unit for that device class, nil for unitless values.
    public var unit: String?
    /// Whether Home Assistant keeps statistics of it (`state_class: measurement`).
    public var isMeasurement: Bool
    /// The values an event takes (Home Assistant's `event_types`); empty for sensors.
    public var eventTypes: [String]

    public init(_ key: String, _ component: Component, _ deviceClass: String?, _ unit: String?, isMeasurement: Bool = true,
                eventTypes: [String] = []) {
        self.key = key
        self.component = component
        self.deviceClass = deviceClass
        self.unit = unit
        self.isMeasurement = component == .sensor && isMeasurement
        self.eventTypes = eventTypes
    }
}

/// The one table of decoded value names (docs/gateway.md lists it).
///
///     for kind in SensorKinds.all where kind.component == .binarySensor { print(kind.key) }
public enum SensorKinds {
    public static let all: [SensorKind] = [
        // Sensors: Home Assistant's device classes and default units.
        SensorKind("temperature", .sensor, "temperature", "°C"),
        SensorKind("temperature_probe", .sensor, "temperature", "°C"),
        SensorKind("dew_point", .sensor, "temperature", "°C"),
        SensorKind("humidity", .sensor, "humidity", "%"),
        SensorKind("battery", .sensor, "battery", "%"),
        SensorKind("pressure", .sensor, "pressure", "hPa"),
        SensorKind("illuminance", .sensor, "illuminance", "lx"),
        SensorKind("voltage", .sensor, "voltage", "V"),
        SensorKind("current", .sensor, "current", "A"),
        SensorKind("power", .sensor, "power", "W"),
        SensorKind("energy", .sensor, "energy", "kWh", isMeasurement: false),
        SensorKind("co2", .sensor, "carbon_dioxide", "ppm"),
        SensorKind("pm25", .sensor, "pm25", "\u{03BC}g/m³"),
        SensorKind("pm10", .sensor, "pm10", "\u{03BC}g/m³"),
        SensorKind("tvoc", .sensor, "volatile_organic_compounds", "\u{03BC}g/m³"),
        SensorKind("formaldehyde", .sensor, nil, "mg/m³"),
        SensorKind("moisture", .sensor, "moisture", "%"),
        SensorKind("conductivity", .sensor, "conductivity", "\u{03BC}S/cm"),
        SensorKind("distance", .sensor, "distance", "m"),
        SensorKind("tank_level", .sensor, "distance", "mm"),
        SensorKind("weight", .sensor, "weight", "kg"),
        SensorKind("speed", .sensor, "speed", "m/s"),
        SensorKind("duration", .sensor, "duration", "s"),
        SensorKind("volume", .sensor, "volume", "L", isMeasurement: false),
        SensorKind("volume_storage", .sensor, "volume_storage", "L"),
        SensorKind("volume_flow_rate", .sensor, "volume_flow_rate", "m³/h"),
        SensorKind("water", .sensor, "water", "L", isMeasurement: false),
        SensorKind("gas", .sensor, "gas", "m³", isMeasurement: false),
        SensorKind("precipitation", .sensor, "precipitation", "mm", isMeasurement: false),
        SensorKind("signal_strength", .sensor, "signal_strength", "dBm"),
        SensorKind("rotation", .sensor, nil, "°"),
        SensorKind("direction", .sensor, nil, "°"),
        SensorKind("rotational_speed", .sensor, nil, "rpm"),
        SensorKind("uv_index", .sensor, nil, "UV index"),
        SensorKind("acceleration", .sensor, nil, "m/s²"),
        SensorKind("acceleration_x", .sensor, nil, "m/s²"),
        SensorKind("acceleration_y", .sensor, nil, "m/s²"),
        SensorKind("acceleration_z", .sensor, nil, "m/s²"),
        SensorKind("gyroscope", .sensor, nil, "°/s"),
        SensorKind("movement_counter", .sensor, nil, nil),
        SensorKind("reading_quality", .sensor, nil, "%"),
        SensorKind("count", .sensor, nil, nil),
        SensorKind("channel", .sensor, nil, nil),
        SensorKind("light_level", .sensor, nil, nil),
        SensorKind("timestamp", .sensor, "timestamp", nil, isMeasurement: false),
        SensorKind("text", .sensor, nil, nil, isMeasurement: false),
        SensorKind("raw", .sensor, nil, nil, isMeasurement: false),
        SensorKind("firmware_version", .sensor, nil, nil, isMeasurement: false),
        SensorKind("device_type", .sensor, nil, nil, isMeasurement: false),
        SensorKind("settings_revision", .sensor, nil, nil, isMeasurement: false),
        // Binary sensors: Home Assistant's binary_sensor device classes.
        SensorKind("generic", .binarySensor, nil, nil),
        SensorKind("power_on", .binarySensor, "power", nil),
        SensorKind("opening", .binarySensor, "opening", nil),
        SensorKind("door", .binarySensor, "door", nil),
        SensorKind("window", .binarySensor, "window", nil),
        SensorKind("garage_door", .binarySensor, "garage_door", nil),
        SensorKind("battery_low", .binarySensor, "battery", nil),
        SensorKind("battery_charging", .binarySensor, "battery_charging", nil),
        SensorKind("carbon_monoxide", .binarySensor, "carbon_monoxide", nil),
        SensorKind("cold", .binarySensor, "cold", nil),
        SensorKind("connectivity", .binarySensor, "connectivity", nil),
        SensorKind("gas_detected", .binarySensor, "gas", nil),
        SensorKind("heat", .binarySensor, "heat", nil),
        SensorKind("light", .binarySensor, "light", nil),
        SensorKind("lock", .binarySensor, "lock", nil),
        SensorKind("leak", .binarySensor, "moisture", nil),
        SensorKind("motion", .binarySensor, "motion", nil),
        SensorKind("moving", .binarySensor, "moving", nil),
        SensorKind("occupancy", .binarySensor, "occupancy", nil),
        SensorKind("plug", .binarySensor, "plug", nil),
        SensorKind("presence", .binarySensor, "presence", nil),
        SensorKind("problem", .binarySensor, "problem", nil),
        SensorKind("running", .binarySensor, "running", nil),
        SensorKind("safety", .binarySensor, "safety", nil),
        SensorKind("smoke", .binarySensor, "smoke", nil),
        SensorKind("sound", .binarySensor, "sound", nil),
        SensorKind("tamper", .binarySensor, "tamper", nil),
        SensorKind("vibration", .binarySensor, "vibration", nil),
        // Events: the value is the event type ("press", "double_press", "rotate_left").
        SensorKind("button", .event, "button", nil, eventTypes: BTHomeObject.eventTypes(BTHomeObject.buttonEvents)),
        SensorKind("dimmer", .event, nil, nil, eventTypes: BTHomeObject.eventTypes(BTHomeObject.dimmerEvents)),
        SensorKind("command", .event, nil, nil, eventTypes: BTHomeObject.eventTypes(BTHomeObject.commandEvents)),
    ]

    static let byKey: [String: SensorKind] = Dictionary(all.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })

    /// The kind of a decoded key, its `_1`, `_2` numbering removed; nil for keys outside the table
    /// (nested objects such as `ibeacon`).
    public static func kind(for key: String) -> SensorKind? {
        if let k = byKey[key] { return k }
        return byKey[baseName(key)]
    }

    /// `temperature_probe_2` → `temperature_probe`; a key without a numeric suffix is its own base.
    public static func baseName(_ key: String) -> String {
        guard let underscore = key.lastIndex(of: "_") else { return key }
        let suffix = key[key.index(after: underscore)...]
        guard !suffix.isEmpty, suffix.allSatisfy({ $0.isASCII && $0.isNumber }) else { return key }
        return String(key[..<underscore])
    }
}
