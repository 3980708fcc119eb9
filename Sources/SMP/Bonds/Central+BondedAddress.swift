import BLECore
import BLEWire

/// Finding a bonded device that advertises with a resolvable private address (Vol 6, Part B,
/// 1.3.2.2), so an app can connect by the identity address it keeps.
extension Central {
    /// The address the bonded device `identity` advertises with now: scans (at most
    /// `timeout`) for a connectable advertiser whose address is `identity`, or resolves to it
    /// with the bond's IRK. `identity` itself when its bond has no IRK; nil when no such
    /// advertiser was heard in time. Installs `bonds.addressResolver` for the scan.
    ///
    ///     let now = try await central.currentAddress(of: identity, bonds: store) ?? identity
    ///     let link = try await central.connect(now)
    public func currentAddress(of identity: LEAddress, bonds: any BondStore, timeout: Duration = .seconds(10)) async throws -> LEAddress? {
        guard let bond = bonds.bond(for: identity), bond.identityResolvingKey != nil else { return identity }
        setAddressResolver(bonds.addressResolver)
        var options = ScanOptions()
        options.timeout = timeout
        for try await event in scan(filter: .all, options: options) {
            guard case .discovered(let p) = event, p.isConnectable else { continue }
            if p.address == identity || p.identity.address == bond.address.address { return p.address }
        }
        return nil
    }
}
