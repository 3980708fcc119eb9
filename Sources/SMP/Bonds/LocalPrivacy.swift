#if canImport(Glibc)
import Glibc
#endif
import BLECore
import BLEWire

/// The central's own private addresses (Vol 6, Part B, 1.3.2): resolvable ones made from the
/// local IRK (`ResolvablePrivateAddress.make`), and the per-adapter identity the bond store
/// keeps for them (a static random address, the local IRK), each made the first time.
extension ResolvablePrivateAddress {
    /// A random prand: 22 random bits, neither all 0 nor all 1, under the bits 0b01.
    public static func randomPrand() -> UInt32 {
        0x40_0000 | UInt32.random(in: 1...0x3F_FFFE)
    }
}

extension OwnAddress {
    /// Resolvable private addresses from the local `irk`, a new one every `rotation`; peers
    /// that hold the IRK (given to them in pairing) resolve them to this central's identity.
    ///
    ///     try await central.setOwnAddress(.resolvablePrivate(irk: try bonds.localIdentityResolvingKey()))
    public static func resolvablePrivate(irk: UInt128, rotation: Duration = OwnAddress.defaultRotation) -> OwnAddress {
        .resolvablePrivate(rotation: rotation) {
            // ah fails only when OpenSSL does: a non-resolvable private address (1.3.2.2, the
            // two most significant bits 0) keeps the central private all the same.
            (try? ResolvablePrivateAddress.make(irk: irk, prand: ResolvablePrivateAddress.randomPrand()).address)
                ?? BluetoothAddress(rawValue: UInt64.random(in: 1...0x3FFF_FFFF_FFFE))
        }
    }
}

extension FileBondStore {
    /// File names of the adapter's own identity, next to its bonds.
    static let staticAddressFile = "own-static-address"
    static let localIRKFile = "own-irk"

    /// This adapter's static random address for `OwnAddress.staticRandom`: read from its
    /// directory, or made and saved (mode 0600) the first time, which creates the directory.
    public func staticRandomAddress() throws(BondStoreError) -> BluetoothAddress {
        try ownValue(Self.staticAddressFile, parse: { BluetoothAddress($0).flatMap { $0.isStaticRandom ? $0 : nil } },
                     make: { BluetoothAddress.randomStatic() }, format: { $0.description })
    }

    /// This adapter's local IRK for `OwnAddress.resolvablePrivate(irk:)`: read, or made and
    /// saved (mode 0600) the first time. It never prints.
    public func localIdentityResolvingKey() throws(BondStoreError) -> UInt128 {
        try ownValue(Self.localIRKFile, parse: { text in
            guard text.count == 32, let high = UInt64(text.prefix(16), radix: 16), let low = UInt64(text.suffix(16), radix: 16) else { return nil }
            return UInt128(high) << 64 | UInt128(low)
        }, make: { UInt128.random(in: 1 ... .max) }, format: { key in
            let high = String(UInt64(truncatingIfNeeded: key >> 64), radix: 16), low = String(UInt64(truncatingIfNeeded: key), radix: 16)
            return String(repeating: "0", count: 16 - high.count) + high + String(repeating: "0", count: 16 - low.count) + low
        })
    }

    /// The value kept in file `name`: parsed when it is there, else made and written.
    private func ownValue<T>(_ name: String, parse: (String) -> T?, make: () -> T, format: (T) -> String) throws(BondStoreError) -> T {
        let text = try readOwnFile(name)
        if let text {
            guard let value = parse(text.trimmingWhitespace) else { throw .corrupt(path: directory + "/" + name, detail: "not a value this store wrote; remove the file to make a new one") }
            return value
        }
        let value = make()
        try writeOwnFile(format(value) + "\n", to: name)
        return value
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(self.drop { $0 == " " || $0 == "\n" }.reversed().drop { $0 == " " || $0 == "\n" }.reversed())
    }
}
