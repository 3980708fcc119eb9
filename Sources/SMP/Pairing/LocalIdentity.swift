import BLECore
import BLEWire

/// This side's identity for key distribution (Vol 3, Part H, 3.6.4): the IRK its resolvable
/// private addresses are made from and its identity address (public, or static random). Sent
/// in Identity Information and Identity Address Information when `PairingOptions.initiatorKeys`
/// holds `.identityKey`, so the peer resolves this central's private addresses to it.
///
///     options.initiatorKeys.insert(.identityKey)
///     options.localIdentity = LocalIdentity(irk: try bonds.localIdentityResolvingKey(), address: LEAddress(adapter, type: .public))
public struct LocalIdentity: Sendable, Hashable {
    public var irk: UInt128
    /// Public, or static random (Vol 6, Part B, 1.3).
    public var address: LEAddress
    public init(irk: UInt128, address: LEAddress) {
        self.irk = irk
        self.address = address
    }
}
