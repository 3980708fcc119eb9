import BLECore
import BLEWire

/// Resolvable private addresses (Core Spec Vol 6, Part B, 1.3.2.2 and 1.3.2.3): the top 24
/// bits are prand (its two most significant bits 0b01), the low 24 bits are
/// hash = ah(IRK, prand) (Vol 3, Part H, 2.2.2).
///
///     if ResolvablePrivateAddress.resolves(report.address, irk: bond.identityResolvingKey!) { ... }
public enum ResolvablePrivateAddress {
    /// Whether `address` is a resolvable private address made with `irk`.
    public static func resolves(_ address: LEAddress, irk: UInt128) -> Bool {
        guard address.randomKind == .resolvablePrivate else { return false }
        let raw = address.address.rawValue
        let prand = UInt32(truncatingIfNeeded: raw >> 24) & 0xFF_FFFF
        let hash = UInt32(truncatingIfNeeded: raw) & 0xFF_FFFF
        guard let expected = try? SMPToolbox.ah(k: irk, r: prand) else { return false }
        return expected == hash
    }

    /// The resolvable private address for `irk` and the random part of `prand` (its two most
    /// significant bits are set to 0b01, 1.3.2.2).
    ///
    ///     let rpa = try ResolvablePrivateAddress.make(irk: irk, prand: 0x708194)
    public static func make(irk: UInt128, prand: UInt32) throws(CryptoError) -> LEAddress {
        let p = (prand & 0x3F_FFFF) | 0x40_0000
        let hash = try SMPToolbox.ah(k: irk, r: p)
        return LEAddress(BluetoothAddress(rawValue: UInt64(p) << 24 | UInt64(hash)), type: .random)
    }
}

extension BondStore {
    /// The bond of the device at `address`: stored under it or under its identity address,
    /// else the bond whose IRK resolves `address` (a peer that rotates its address).
    ///
    ///     let bond = store.bond(resolving: discovered.address)
    public func bond(resolving address: LEAddress) -> Bond? {
        if let b = bond(for: address) { return b }
        guard address.randomKind == .resolvablePrivate else { return nil }
        return allBonds().first { b in b.identityResolvingKey.map { ResolvablePrivateAddress.resolves(address, irk: $0) } ?? false }
    }

    /// Maps a resolvable private address of a bonded peer to its identity address, for
    /// `Central.setAddressResolver`; nil for every other address.
    ///
    ///     await central.setAddressResolver(store.addressResolver)
    public var addressResolver: AddressResolver {
        { address in
            guard address.randomKind == .resolvablePrivate, let b = self.bond(resolving: address) else { return nil }
            return b.address
        }
    }

    /// The resolving list entries (identity address and IRK) of the bonds that have an IRK,
    /// for `Central.loadResolvingList`.
    public var resolvingListEntries: [ResolvingListEntry] {
        allBonds().compactMap { b in
            guard let irk = b.identityResolvingKey, let identity = b.identityAddress else { return nil }
            return ResolvingListEntry(identity: identity, peerIRK: irk)
        }
    }
}
