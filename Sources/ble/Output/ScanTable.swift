import BLECore
import BLEWire

/// Rows and lines for scan results: the live table on a terminal, one line per device when
/// piped, JSON objects with `--json`.
enum ScanFormat {
    static func address(_ a: LEAddress) -> String { "\(a.address)/\(a.type.isRandom ? "random" : "public")" }

    /// "ADDRESS/random", and " = IDENTITY/random" after it for a resolved private address.
    static func address(_ p: DiscoveredPeripheral) -> String {
        address(p.address) + (resolvedIdentity(p).map { " = " + address($0) } ?? "")
    }

    /// The identity address of a bonded device that advertises under another address.
    static func resolvedIdentity(_ p: DiscoveredPeripheral) -> LEAddress? {
        guard let i = p.identityAddress, i.address != p.address.address else { return nil }
        return i
    }

    static func services(_ p: DiscoveredPeripheral) -> [String] {
        p.advertisingData.serviceUUIDs.map { u in AssignedNumbers.serviceName(u).map { "\(u) \($0)" } ?? "\(u)" }
    }

    static func manufacturer(_ p: DiscoveredPeripheral) -> String? {
        guard let m = p.advertisingData.manufacturerData.first else { return nil }
        return AssignedNumbers.companyName(m.companyID) ?? "0x\(hex(m.companyID, width: 4))"
    }

    static func rssi(_ p: DiscoveredPeripheral) -> String {
        p.rssi == 127 ? "?" : String(Int(p.smoothedRSSI.rounded()))
    }

    /// One line for a pipe: "F0:5E:B1:00:00:01/random  -42 dBm  "HRM sim"  180D Heart Rate  Apple, Inc.".
    static func line(_ event: String, _ p: DiscoveredPeripheral) -> String {
        var parts = [event, address(p), "\(rssi(p)) dBm"]
        parts.append(p.name.map { "\"\(TerminalText.escape($0))\"" } ?? "-")
        let s = services(p)
        if !s.isEmpty { parts.append("services " + s.joined(separator: ", ")) }
        if let m = manufacturer(p) { parts.append("manufacturer \(m)") }
        if let tx = p.advertisingData.txPowerLevel { parts.append("tx power \(tx) dBm") }
        let beacons = AdvertisedData.beacons(p.advertisingData)
        for b in beacons { parts.append(TerminalText.escape(b.summary)) }
        for (uuid, data) in AdvertisedData.serviceData(p.advertisingData) { parts.append("service data \(uuid) \(hexString(data))") }
        if !p.isConnectable { parts.append("non-connectable") }
        return parts.joined(separator: "  ")
    }

    static func json(_ event: String, _ p: DiscoveredPeripheral) -> JSONValue {
        .object([
            ("event", .string(event)),
            ("address", .string(p.address.address.description)),
            ("addressType", .string(p.address.type.isRandom ? "random" : "public")),
            ("identityAddress", .optional(resolvedIdentity(p).map { $0.address.description })),
            ("identityAddressType", .optional(resolvedIdentity(p).map { $0.type.isRandom ? "random" : "public" })),
            ("name", .optional(p.name)),
            ("rssi", .int(Int(p.rssi))),
            ("smoothedRSSI", .double((p.smoothedRSSI * 10).rounded() / 10)),
            ("connectable", .bool(p.isConnectable)),
            ("services", .array(p.advertisingData.serviceUUIDs.map { .string("\($0)") })),
            ("manufacturers", .array(p.advertisingData.manufacturerData.map { m in
                .object([("id", .int(Int(m.companyID))), ("name", .optional(AssignedNumbers.companyName(m.companyID))), ("data", .string(hexString(m.data)))])
            })),
            // The advertised TX Power Level (AD type 0x0A), not the report's field.
            ("txPower", p.advertisingData.txPowerLevel.map { .int(Int($0)) } ?? .null),
            ("serviceData", .array(AdvertisedData.serviceData(p.advertisingData).map { s in
                .object([("uuid", .string("\(s.uuid)")), ("data", .string(hexString(s.data)))])
            })),
            ("beacons", .array(AdvertisedData.beacons(p.advertisingData).map(\.json))),
        ])
    }

    /// The live table, strongest first, as ANSI text that redraws the screen from the top.
    /// Lines are cut to the terminal's `width` so none wraps and the redraw stays in place.
    static func table(_ list: [DiscoveredPeripheral], now: ContinuousClock.Instant, console: Console, width: Int) -> String {
        let sorted = list.sorted { $0.smoothedRSSI > $1.smoothedRSSI }
        func cut(_ s: String) -> String { s.count > width ? String(s.prefix(max(1, width - 1))) : s }
        // An IDENTITY column next to ADDRESS while a bonded device uses a private address.
        let identities = sorted.contains { resolvedIdentity($0) != nil }
        func row(_ cells: [String]) -> String {
            guard identities else { return Self.row(cells) }
            return Self.row(Array(cells.prefix(2)), widths: [24, 24]) + Self.row(Array(cells.dropFirst(2)))
        }
        var lines = [console.paint(cut(row(["ADDRESS"] + (identities ? ["IDENTITY"] : []) + ["NAME", "RSSI", "TX", "SERVICES", "MANUFACTURER", "SEEN", "DATA"])), "1")]
        for p in sorted {
            let age = max(0, p.lastSeen.duration(to: now) / .seconds(1))
            let seen = age < 1 ? "now" : "\(Int(age)) s ago"
            let tx = p.advertisingData.txPowerLevel.map { String($0) } ?? "-"
            let identity = identities ? [resolvedIdentity(p).map(address) ?? "-"] : []
            lines.append(cut(row([address(p.address)] + identity + [p.name.map(TerminalText.escape) ?? "-", rssi(p), tx, services(p).joined(separator: ", "),
                                  manufacturer(p) ?? "-", seen, data(p)])))
        }
        lines.append(console.paint(cut("\(sorted.count) device\(sorted.count == 1 ? "" : "s") - Ctrl-C to stop"), "2"))
        var out = "\u{1B}[H"
        for l in lines { out += l + "\u{1B}[K\n" }
        return out + "\u{1B}[J"
    }

    /// The table's last column: decoded beacons, else service data as UUID=hex.
    static func data(_ p: DiscoveredPeripheral) -> String {
        let beacons = AdvertisedData.beacons(p.advertisingData)
        if !beacons.isEmpty { return TerminalText.escape(beacons.map(\.summary).joined(separator: "; ")) }
        let list = AdvertisedData.serviceData(p.advertisingData).map { "\($0.uuid)=\(hexString($0.data))" }
        return list.isEmpty ? "-" : list.joined(separator: " ")
    }

    static func row(_ cells: [String], widths: [Int] = [24, 20, 5, 4, 30, 20, 8, 60]) -> String {
        var s = ""
        for (i, c) in cells.enumerated() {
            let w = i < widths.count ? widths[i] : 10
            let cell = c.count > w ? String(c.prefix(w - 1)) + "~" : c
            s += cell + String(repeating: " ", count: max(1, w - cell.count + 1))
        }
        return s
    }
}
