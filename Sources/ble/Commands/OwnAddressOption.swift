import BLECore
import SMP
import BLEWire

/// `--own-address` of `ble scan`, `ble connect`, `ble pair`, `ble advertise` and `ble serve`:
/// the address this side uses on the air.
enum OwnAddressOption {
    enum Kind { case `public`, staticRandom, resolvablePrivate }

    static let option = OptionSpec.value("own-address", nil, "public|static|rpa",
                                         "address to scan and connect with: the controller's public one (default), this adapter's static random address, or resolvable private addresses from its local IRK, a new one every 15 min (both kept in the bond directory, written the first time)")

    /// The same option for `ble advertise` and `ble serve`.
    static let advertisingOption = OptionSpec.value("own-address", nil, "public|static|rpa",
                                                    "address to advertise with: the controller's public one (default), this adapter's static random address, or resolvable private addresses from its local IRK, a new one every 15 min, made by the controller where it has LL Privacy (both kept in the bond directory, written the first time)")

    static func parse(_ ctx: CommandContext) throws(UsageError) -> Kind {
        guard let value = ctx.args.value("own-address") else { return .public }
        switch value.lowercased() {
        case "public": return .public
        case "static": return .staticRandom
        case "rpa": return .resolvablePrivate
        default: throw UsageError("--own-address takes public, static or rpa, not \"\(value)\"")
        }
    }

    /// The policy for `kind` from the adapter's bond directory (nil for public): its static
    /// random address, or resolvable private addresses from its local IRK.
    static func policy(_ kind: Kind, _ ctx: CommandContext, central: Central) async throws -> OwnAddress? {
        switch kind {
        case .public:
            return nil
        case .staticRandom:
            let store = try await BondsCommand.store(ctx, central: central)
            do throws(BondStoreError) { return .staticRandom(try store.staticRandomAddress()) } catch { throw CLIFailure("\(error)") }
        case .resolvablePrivate:
            let store = try await BondsCommand.store(ctx, central: central)
            do throws(BondStoreError) { return .resolvablePrivate(irk: try store.localIdentityResolvingKey()) } catch { throw CLIFailure("\(error)") }
        }
    }

    /// `policy` for `ble advertise` and `ble serve`: with `rpa` the local IRK also goes on the
    /// controller's resolving list where it has LL Privacy and room, so that the controller
    /// makes the set's resolvable private addresses; otherwise the host makes them.
    static func advertisingPolicy(_ kind: Kind, _ ctx: CommandContext, central: Central) async throws -> OwnAddress? {
        guard kind == .resolvablePrivate else { return try await policy(kind, ctx, central: central) }
        let store = try await BondsCommand.store(ctx, central: central)
        let irk: UInt128
        do throws(BondStoreError) { irk = try store.localIdentityResolvingKey() } catch { throw CLIFailure("\(error)") }
        do throws(HCIError) {
            try await central.loadResolvingList([], localIRK: irk)
        } catch {
            ctx.logger.log(.warning, "the controller refused the local IRK on its resolving list (\(error)); the host makes the resolvable private addresses")
        }
        return .resolvablePrivate(irk: irk)
    }

    /// Sets the central's own address for `kind` (a no-op for public).
    static func apply(_ kind: Kind, _ ctx: CommandContext, central: Central) async throws {
        guard let policy = try await policy(kind, ctx, central: central) else { return }
        do throws(OwnAddressError) { try await central.setOwnAddress(policy) } catch { throw CLIFailure("\(error)") }
        let address = await central.currentRandomAddress
        ctx.logger.log(.info, "own address: \(address.map { "\($0)" } ?? "public") (\(policy))")
    }

    /// What `ble pair` and `ble serve` distribute with a private own address (Identity
    /// Information and Identity Address Information): the adapter's local IRK and its identity
    /// address, the static random one for `static`, the controller's public one for `rpa`, so
    /// the peer resolves this side's later addresses. Nil for a public own address.
    static func identity(_ kind: Kind, _ ctx: CommandContext, central: Central) async throws -> LocalIdentity? {
        guard kind != .public else { return nil }
        let store = try await BondsCommand.store(ctx, central: central)
        let irk: UInt128, identity: LEAddress
        do throws(BondStoreError) {
            irk = try store.localIdentityResolvingKey()
            identity = kind == .staticRandom ? LEAddress(try store.staticRandomAddress(), type: .random) : LEAddress(.zero, type: .public)
        } catch {
            throw CLIFailure("\(error)")
        }
        if kind == .staticRandom { return LocalIdentity(irk: irk, address: identity) }
        guard let adapter = await central.controllerInfo?.address else { throw CLIFailure("the controller did not report its public address, the identity to give the device") }
        return LocalIdentity(irk: irk, address: LEAddress(adapter, type: .public))
    }
}
