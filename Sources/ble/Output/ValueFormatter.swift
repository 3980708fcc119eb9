import BLECore
import GATTClient
import BLEWire

/// Shows a characteristic value the way a person reads it: hex, and as an unsigned integer
/// and UTF-8 text when those fit, and through the typed decoder of a known characteristic.
///
///     0x5A (1 byte, uint 90, "Z")
enum ValueFormatter {
    /// Values longer than this are shown cut, with their length.
    static let shownBytes = 64

    static func text(_ value: [UInt8], uuid: BluetoothUUID?) -> String {
        var parts = ["\(value.count) byte\(value.count == 1 ? "" : "s")"]
        if let u = uint(value) { parts.append("uint \(u)") }
        if let s = utf8(value) { parts.append("\"\(shownText(s))\"") }
        var s = value.isEmpty ? "(empty)" : "0x" + hex(value)
        s += " (" + parts.joined(separator: ", ") + ")"
        if let uuid, let decoded = decoded(value, uuid: uuid) { s += " -> \(decoded)" }
        return s
    }

    static func json(_ value: [UInt8], uuid: BluetoothUUID?) -> JSONValue {
        var members: [(String, JSONValue)] = [("hex", .string(hexString(value))), ("length", .int(value.count))]
        if let u = uint(value) { members.append(("uint", .string(String(u)))) }
        if let s = utf8(value) { members.append(("utf8", .string(s))) }
        if let uuid, let d = decoded(value, uuid: uuid) { members.append(("decoded", .string(d))) }
        return .object(members)
    }

    static func hex(_ value: [UInt8]) -> String {
        let shown = value.prefix(shownBytes)
        let s = shown.map { b in String(b, radix: 16, uppercase: true).count == 1 ? "0" + String(b, radix: 16, uppercase: true) : String(b, radix: 16, uppercase: true) }.joined()
        return value.count > shownBytes ? s + "..." : s
    }

    /// Little-endian unsigned value of 1, 2, 4 or 8 bytes (GATT's byte order).
    static func uint(_ value: [UInt8]) -> UInt64? {
        guard [1, 2, 4, 8].contains(value.count) else { return nil }
        return value.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// The value as text when it is valid UTF-8 of printable characters, line breaks and tabs
    /// (trailing NULs dropped), exactly as sent: JSON carries it as it is, `text` cuts it to
    /// `shownBytes` characters and escapes it for the terminal.
    static func utf8(_ value: [UInt8]) -> String? {
        var bytes = value[...]
        while bytes.last == 0 { bytes = bytes.dropLast() }
        guard !bytes.isEmpty, let s = String(validating: bytes, as: UTF8.self) else { return nil }
        guard s.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F || $0 == "\n" || $0 == "\t" }) else { return nil }
        return s
    }

    static func shownText(_ s: String) -> String {
        TerminalText.escape(s.count > shownBytes ? String(s.prefix(shownBytes)) + "..." : s)
    }

    /// The typed decoder's reading for known characteristics.
    static func decoded(_ value: [UInt8], uuid: BluetoothUUID) -> String? {
        switch uuid.uuid16 {
        case 0x2A37:
            guard let m = try? HeartRateMeasurement(gattValue: value) else { return "malformed Heart Rate Measurement" }
            var s = "\(m.beatsPerMinute) bpm"
            switch m.sensorContact {
            case .detected: s += ", contact"
            case .notDetected: s += ", no contact"
            case .notSupported: break
            }
            if let e = m.energyExpended { s += ", \(e) kJ" }
            if !m.rrIntervals.isEmpty { s += ", RR " + m.rrIntervalSeconds.map { String(format3($0)) + " s" }.joined(separator: " ") }
            return s
        case 0x2A19:
            guard let b = try? BatteryLevel(gattValue: value) else { return "malformed Battery Level" }
            return "\(b.percent) %"
        case 0x2A38:
            guard let l = try? BodySensorLocation(gattValue: value) else { return "malformed Body Sensor Location" }
            return l.name
        case 0x2A01:
            // Appearance (Core Specification Supplement, Part A, 1.12; names from Assigned Numbers 2.6).
            guard let a = try? Appearance(gattValue: value) else { return "malformed Appearance" }
            return a.name ?? "unknown appearance (category \(a.category), subcategory \(a.subcategory))"
        default:
            return nil
        }
    }

    static func format3(_ v: Double) -> String { fixedDecimals(v, 3) }
}
