import BLEWire
import BLECore

/// Names a peripheral found by a scan, for `connect`: the address it advertised with.
///
///     if case .discovered(let discovery) = event { found = discovery.peripheral }
public struct PeripheralIdentifier: Hashable, Sendable, CustomStringConvertible {
    public var address: LEAddress
    public init(address: LEAddress) { self.address = address }
    /// "F0:F1:F2:F3:F4:F5 (random)".
    public var description: String { "\(address)" }
}

extension DiscoveredPeripheral {
    /// The identifier to connect to this device with.
    public var peripheral: PeripheralIdentifier { PeripheralIdentifier(address: address) }
}
