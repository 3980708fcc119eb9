import BLEHost

/// Scan results as CSV (RFC 4180): one row per device the first time it is heard.
public enum ScanCSV {
    public static let header = "address,address_type,name,rssi_dbm,services"

    /// Scans until `devices` devices were reported (nil: until the scan ends), one row each.
    public static func run(_ central: Central, devices: Int? = nil, write: @Sendable (String) -> Void) async throws {
        for await state in await central.stateEvents() where state == .poweredOn { break }
        write(header)
        var count = 0
        for try await event in await central.scan() {
            guard case .discovered(let device) = event else { continue }
            write(row(device))
            count += 1
            if let devices, count >= devices { break }
        }
    }

    public static func row(_ device: DiscoveredPeripheral) -> String {
        let services = device.advertisingData.serviceUUIDs.map(\.description).joined(separator: " ")
        return [device.address.address.description, device.address.type.description, device.name ?? "",
                String(device.rssi), services].map(field).joined(separator: ",")
    }

    /// A field quoted when it holds a comma, a quote or a line break (quotes doubled).
    public static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.map { $0 == "\"" ? "\"\"" : String($0) }.joined() + "\""
    }
}
