import BLECore
import SMP
import BLEWire

/// Turns the DEVICE argument into an address: `F0:5E:B1:00:00:01` (random unless suffixed
/// `/public`), or a name substring found by scanning.
enum DeviceResolver {
    enum Target: Sendable, Equatable {
        case address(LEAddress)
        case name(String)
    }

    static func parse(_ text: String) throws(UsageError) -> Target {
        var body = Substring(text)
        var type: LEAddressType = .random
        var suffixed = false
        if let slash = text.lastIndex(of: "/") {
            let suffix = text[text.index(after: slash)...].lowercased()
            switch suffix {
            case "public": type = .public
            case "random": type = .random
            default: throw UsageError("DEVICE suffix must be /public or /random, not /\(suffix)")
            }
            body = text[..<slash]
            suffixed = true
        }
        if let address = BluetoothAddress(String(body)) { return .address(LEAddress(address, type: type)) }
        if suffixed { throw UsageError("\"\(body)\" is not an address like F0:5E:B1:00:00:01; a name cannot take /public or /random") }
        guard !text.isEmpty else { throw UsageError("DEVICE is empty; give an address like F0:5E:B1:00:00:01 or part of the device's name") }
        return .name(text)
    }

    /// The address to connect to: given, or the first device whose name contains the text,
    /// scanning for at most `scanTimeout`. A bonded peer with an IRK may advertise with a
    /// resolvable private address that changes (Vol 6, Part B, 1.3.2.2): its current address
    /// is found by scanning, resolved with the IRK (else the address is used as given).
    static func resolve(_ target: Target, central: Central, scanTimeout: Duration, console: Console, bonds: (any BondStore)? = nil) async throws -> LEAddress {
        switch target {
        case .address(let a):
            guard let bonds, let now = try await central.currentAddress(of: a, bonds: bonds, timeout: scanTimeout) else { return a }
            if now != a { console.status("\(a.address) advertises as \(now.address) (resolved with its IRK)") }
            return now
        case .name(let needle):
            console.status("scanning for a device named like \"\(needle)\"...")
            var options = ScanOptions()
            options.timeout = scanTimeout
            for try await event in await central.scan(filter: ScanFilter(nameContains: needle), options: options) {
                if case .discovered(let p) = event {
                    console.status("found \(p.address) \"\(p.name ?? "")\"")
                    return p.address
                }
            }
            let seconds = Double(scanTimeout.components.seconds)
            throw CLIFailure("no device named like \"\(needle)\" advertised within \(formatSeconds(seconds)) s; check 'ble scan', or raise --scan-timeout")
        }
    }
}
