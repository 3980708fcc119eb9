/// Maps the address a device uses now (a resolvable private address, Vol 6, Part B,
/// 1.3.2.2) to its identity address; nil when it does not know the address. The module SMP
/// makes one from a bond store (`store.addressResolver`), resolving with each bond's IRK.
public typealias AddressResolver = @Sendable (LEAddress) -> LEAddress?

/// One entry of the controller's resolving list (Vol 4, Part E, 7.8.38): the peer's identity
/// address and IRK. This side uses no local IRK (its own address is public).
public struct ResolvingListEntry: Sendable, Hashable {
    public var identity: LEAddress
    public var peerIRK: UInt128
    public init(identity: LEAddress, peerIRK: UInt128) {
        self.identity = identity
        self.peerIRK = peerIRK
    }
}

/// Resolvable private addresses: scan results name a bonded peer by its identity address
/// (`DiscoveredPeripheral.identityAddress`) however often it changes its address.
extension Central {
    /// Sets what resolves the addresses of scan reports; nil: none are resolved (a
    /// controller's resolving list still reports identity addresses, type public-id/random-id).
    ///
    ///     await central.setAddressResolver(bonds.addressResolver)
    public func setAddressResolver(_ resolver: AddressResolver?) {
        scanner.enter(on: executor) { $0.setAddressResolver(resolver) }
    }

    /// Loads `entries` into the controller's resolving list and turns address resolution on
    /// (Vol 4, Part E, 7.8.38, 7.8.44; Vol 6, Part B, 6.1), so the controller reports and
    /// connects bonded peers by their identity address (address types public-id/random-id).
    /// Returns false, sending nothing, when the controller has no LL Privacy feature; call it
    /// while nothing scans or connects (the controller refuses it then: Command Disallowed).
    ///
    ///     if try await central.loadResolvingList(bonds.resolvingListEntries) { ... }
    @discardableResult
    public func loadResolvingList(_ entries: [ResolvingListEntry]) async throws(HCIError) -> Bool {
        guard let info = controllerInfo, info.leFeatures.contains(.llPrivacy) else { return false }
        let host = self.host
        _ = try await host.send(HCICommand.leSetAddressResolutionEnable(false))
        _ = try await host.send(HCICommand.leClearResolvingList())
        for e in entries {
            _ = try await host.send(HCICommand.leAddDeviceToResolvingList(e))
        }
        _ = try await host.send(HCICommand.leSetAddressResolutionEnable(!entries.isEmpty))
        return true
    }
}

/// The resolving list commands (Vol 4, Part E, 7.8.38, 7.8.40, 7.8.44).
extension HCICommand {
    /// HCI_LE_Add_Device_To_Resolving_List (0x2027): Peer_Identity_Address_Type,
    /// Peer_Identity_Address, Peer_IRK, Local_IRK (all zero: none), keys least significant first.
    public static func leAddDeviceToResolvingList(_ entry: ResolvingListEntry) -> HCICommandPacket {
        var p: [UInt8] = [entry.identity.type.isRandom ? 0x01 : 0x00]
        p += entry.identity.address.littleEndianBytes
        p.appendLE(entry.peerIRK)
        p += [UInt8](repeating: 0, count: 16)
        return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2027), parameters: p)
    }
    /// HCI_LE_Clear_Resolving_List (0x2029).
    public static func leClearResolvingList() -> HCICommandPacket { HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2029)) }
    /// HCI_LE_Set_Address_Resolution_Enable (0x202D).
    public static func leSetAddressResolutionEnable(_ on: Bool) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x202D), parameters: [on ? 0x01 : 0x00])
    }
}

extension Scanner {
    /// Installs `resolver` and resolves the devices already known again (a bond made since).
    func setAddressResolver(_ resolver: AddressResolver?) {
        addressResolver = resolver
        for (key, record) in devices where !record.peripheral.isAnonymous {
            devices[key]?.peripheral.identityAddress = identity(of: record.peripheral.address)
        }
    }

    /// The identity address of a report's advertiser: the controller's resolution (address
    /// types 0x02/0x03 carry the identity), else the resolver's for a resolvable private address.
    func identity(of address: LEAddress) -> LEAddress? {
        switch address.type {
        case .publicIdentity: return LEAddress(address.address, type: .public)
        case .randomIdentity: return LEAddress(address.address, type: .random)
        case .random where address.randomKind == .resolvablePrivate: return addressResolver?(address)
        default: return nil
        }
    }
}
