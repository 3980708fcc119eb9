/// The BTHome v2 object ids (bthome.io/format, "Sensor data", "Binary sensor data", "Events",
/// "Commands", "Device information"): what each id carries, its size, sign and factor. Values are converted to
/// the units of ``SensorKinds`` (millimetres and millilitres to metres and litres, pounds to kilograms).
enum BTHomeObject: Sendable {
    /// An integer of `size` bytes, `signed` or not, times `multiplier ÷ divisor`.
    case number(key: String, size: Int, signed: Bool, multiplier: Int64, divisor: Int64)
    /// A one-byte boolean (0 = off).
    case binary(key: String)
    /// A button (1 byte) or dimmer (2 bytes) event.
    case button
    case dimmer
    /// A command event: a byte whose low 5 bits are the arguments' length, the opcode, the arguments.
    case command
    /// A length-prefixed UTF-8 string or raw bytes.
    case text
    case raw
    /// Seconds since 1970 (uint32), published as ISO 8601 UTC.
    case timestamp
    /// Packet id (uint8), for dropping repeats.
    case packetID
    /// Device type id (uint16).
    case deviceType
    /// Firmware version of 4 (0xF1) or 3 (0xF2) bytes, most significant part last.
    case firmware(size: Int)

    /// The size of the object's data, nil for length-prefixed objects.
    var size: Int? {
        switch self {
        case .number(_, let size, _, _, _): return size
        case .binary, .button, .packetID: return 1
        case .dimmer, .deviceType: return 2
        case .timestamp: return 4
        case .firmware(let size): return size
        case .text, .raw, .command: return nil
        }
    }

    static func n(_ key: String, _ size: Int, signed: Bool = false, _ multiplier: Int64 = 1, _ divisor: Int64 = 1) -> BTHomeObject {
        .number(key: key, size: size, signed: signed, multiplier: multiplier, divisor: divisor)
    }

    /// Object id → object; ids not here end parsing.
    static let table: [UInt8: BTHomeObject] = [
        0x00: .packetID,
        0x01: n("battery", 1),
        0x02: n("temperature", 2, signed: true, 1, 100),
        0x03: n("humidity", 2, 1, 100),
        0x04: n("pressure", 3, 1, 100),
        0x05: n("illuminance", 3, 1, 100),
        0x06: n("weight", 2, 1, 100),
        0x07: n("weight", 2, 45_359_237, 10_000_000_000),   // 0.01 lb → kg
        0x08: n("dew_point", 2, signed: true, 1, 100),
        0x09: n("count", 1),
        0x0A: n("energy", 3, 1, 1000),
        0x0B: n("power", 3, 1, 100),
        0x0C: n("voltage", 2, 1, 1000),
        0x0D: n("pm25", 2),
        0x0E: n("pm10", 2),
        0x0F: .binary(key: "generic"),
        0x10: .binary(key: "power_on"),
        0x11: .binary(key: "opening"),
        0x12: n("co2", 2),
        0x13: n("tvoc", 2),
        0x14: n("moisture", 2, 1, 100),
        0x15: .binary(key: "battery_low"),
        0x16: .binary(key: "battery_charging"),
        0x17: .binary(key: "carbon_monoxide"),
        0x18: .binary(key: "cold"),
        0x19: .binary(key: "connectivity"),
        0x1A: .binary(key: "door"),
        0x1B: .binary(key: "garage_door"),
        0x1C: .binary(key: "gas_detected"),
        0x1D: .binary(key: "heat"),
        0x1E: .binary(key: "light"),
        0x1F: .binary(key: "lock"),
        0x20: .binary(key: "leak"),
        0x21: .binary(key: "motion"),
        0x22: .binary(key: "moving"),
        0x23: .binary(key: "occupancy"),
        0x24: .binary(key: "plug"),
        0x25: .binary(key: "presence"),
        0x26: .binary(key: "problem"),
        0x27: .binary(key: "running"),
        0x28: .binary(key: "safety"),
        0x29: .binary(key: "smoke"),
        0x2A: .binary(key: "sound"),
        0x2B: .binary(key: "tamper"),
        0x2C: .binary(key: "vibration"),
        0x2D: .binary(key: "window"),
        0x2E: n("humidity", 1),
        0x2F: n("moisture", 1),
        0x3A: .button,
        0x3B: .command,
        0x3C: .dimmer,
        0x3D: n("count", 2),
        0x3E: n("count", 4),
        0x3F: n("rotation", 2, signed: true, 1, 10),
        0x40: n("distance", 2, 1, 1000),            // mm → m
        0x41: n("distance", 2, 1, 10),
        0x42: n("duration", 3, 1, 1000),
        0x43: n("current", 2, 1, 1000),
        0x44: n("speed", 2, 1, 100),
        0x45: n("temperature", 2, signed: true, 1, 10),
        0x46: n("uv_index", 1, 1, 10),
        0x47: n("volume", 2, 1, 10),
        0x48: n("volume", 2, 1, 1000),              // mL → L
        0x49: n("volume_flow_rate", 2, 1, 1000),
        0x4A: n("voltage", 2, 1, 10),
        0x4B: n("gas", 3, 1, 1000),
        0x4C: n("gas", 4, 1, 1000),
        0x4D: n("energy", 4, 1, 1000),
        0x4E: n("volume", 4, 1, 1000),
        0x4F: n("water", 4, 1, 1000),
        0x50: .timestamp,
        0x51: n("acceleration", 2, 1, 1000),
        0x52: n("gyroscope", 2, 1, 1000),
        0x53: .text,
        0x54: .raw,
        0x55: n("volume_storage", 4, 1, 1000),
        0x56: n("conductivity", 2),
        0x57: n("temperature", 1, signed: true),
        0x58: n("temperature", 1, signed: true, 35, 100),
        0x59: n("count", 1, signed: true),
        0x5A: n("count", 2, signed: true),
        0x5B: n("count", 4, signed: true),
        0x5C: n("power", 4, signed: true, 1, 100),
        0x5D: n("current", 2, signed: true, 1, 1000),
        0x5E: n("direction", 2, 1, 100),
        0x5F: n("precipitation", 2, 1, 10),
        0x60: n("channel", 1),
        0x61: n("rotational_speed", 2),
        0x62: n("speed", 4, signed: true, 1, 1_000_000),
        0x63: n("acceleration", 4, signed: true, 1, 1_000_000),
        0x64: n("light_level", 1),
        0x65: n("settings_revision", 1),
        0xF0: .deviceType,
        0xF1: .firmware(size: 4),
        0xF2: .firmware(size: 3),
    ]

    /// Button events (bthome.io "Events"): 0x00 is "none" and gives no value.
    static let buttonEvents: [UInt8: String] = [
        0x01: "press", 0x02: "double_press", 0x03: "triple_press", 0x04: "long_press",
        0x05: "long_double_press", 0x06: "long_triple_press", 0x80: "hold_press",
    ]

    /// Dimmer events; the second byte is the number of steps.
    static let dimmerEvents: [UInt8: String] = [0x01: "rotate_left", 0x02: "rotate_right"]

    /// Command opcodes (bthome.io "Commands"); the arguments (the steps of a step) are not published.
    static let commandEvents: [UInt8: String] = [0x00: "off", 0x01: "on", 0x02: "toggle", 0x03: "step_up", 0x04: "step_down"]

    /// The event types of an event key, in code order, for Home Assistant's `event_types`.
    static func eventTypes(_ events: [UInt8: String]) -> [String] { events.sorted { $0.key < $1.key }.map(\.value) }
}
