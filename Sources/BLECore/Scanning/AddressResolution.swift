import BLEWire

/// Maps the address a device uses now (a resolvable private address, Vol 6, Part B,
/// 1.3.2.2) to its identity address; nil when it does not know the address. The module SMP
/// makes one from a bond store (`store.addressResolver`), resolving with each bond's IRK.
public typealias AddressResolver = @Sendable (LEAddress) -> LEAddress?

/// One entry of the controller's resolving list (Vol 4, Part E, 7.8.38): the peer's identity
/// address and IRK, and this side's IRK for links with it (nil: none, all zero).
public struct ResolvingListEntry: Sendable, Hashable {
    public var identity: LEAddress
    public var peerIRK: UInt128
    /// The local IRK the controller makes this side's resolvable private addresses from
    /// when it generates them (Vol 6, Part B, 6.2).
    public var localIRK: UInt128?
    public init(identity: LEAddress, peerIRK: UInt128, localIRK: UInt128? = nil) {
        self.identity = identity
        self.peerIRK = peerIRK
        self.localIRK = localIRK
    }

    /// The entry of this side's own advertising: peer identity 00:00:00:00:00:00 (public), no
    /// peer IRK, the local IRK. Advertising sets name it in Peer_Address_Type and Peer_Address
    /// with Own_Address_Type 0x03, and the controller makes their resolvable private
    /// addresses from its local IRK (Vol 4, Part E, 7.8.53).
    ///
    ///     let entry = ResolvingListEntry.advertising(localIRK: irk)
    public static func advertising(localIRK: UInt128) -> ResolvingListEntry {
        ResolvingListEntry(identity: advertisingIdentity, peerIRK: 0, localIRK: localIRK)
    }

    /// The identity the advertising entry is listed under.
    static let advertisingIdentity = LEAddress(.zero, type: .public)
}

/// Resolvable private addresses: scan results name a bonded peer by its identity address
/// (`DiscoveredPeripheral.identityAddress`) however often it changes its address.
extension Central {
    /// Sets what resolves the addresses of scan reports; nil: none are resolved (a
    /// controller's resolving list still reports identity addresses, type public-id/random-id).
    ///
    ///     await central.setAddressResolver(bonds.addressResolver)
    public func setAddressResolver(_ resolver: AddressResolver?) {
        scanner.setAddressResolver(resolver)
    }

    /// Loads `entries` into the controller's resolving list and turns address resolution on
    /// (Vol 4, Part E, 7.8.38, 7.8.44; Vol 6, Part B, 6.1), so the controller reports and
    /// connects bonded peers by their identity address (address types public-id/random-id).
    /// A full list is no error: entries past LE Read Resolving List Size, or from the first
    /// add refused with Memory Capacity Exceeded (0x07), stay with the host's resolver
    /// (`setAddressResolver`) and are listed in `notLoaded`. `privateAddressTimeout` sets LE
    /// Set Resolvable Private Address Timeout (1 s to 1 hour). Sends nothing when the
    /// controller has no LL Privacy feature; call it while nothing scans, connects or advertises (the
    /// controller refuses it then: Command Disallowed). Entries with a local IRK let the
    /// controller make this side's resolvable private addresses itself: with
    /// `OwnAddress.resolvablePrivate` the scan and create-connection commands then carry
    /// Own_Address_Type 0x03. `localIRK` adds `ResolvingListEntry.advertising(localIRK:)`
    /// after `entries` when the list has room for it: advertising sets started afterwards
    /// with `OwnAddress.resolvablePrivate` then have the controller make their addresses
    /// (`AdvertisingSet.controllerMakesAddresses`); without room, or without LL Privacy, the
    /// host makes them as before.
    ///
    ///     let load = try await central.loadResolvingList(bonds.resolvingListEntries, localIRK: try bonds.localIdentityResolvingKey())
    @discardableResult
    public func loadResolvingList(_ entries: [ResolvingListEntry], privateAddressTimeout: Duration? = nil,
                                  localIRK: UInt128? = nil) async throws(HCIError) -> ResolvingListLoad {
        guard let info = controllerInfo, info.leFeatures.contains(.llPrivacy) else {
            if localIRK != nil { options.logger.log(.debug, "the controller has no LL Privacy: the host makes the advertising sets' resolvable private addresses") }
            return ResolvingListLoad(isEnabled: false, loaded: [], notLoaded: entries)
        }
        let host = self.host
        setControllerGeneratesPrivateAddresses(false)
        ownAddress.advertisingIRKOnList = false
        _ = try await host.send(HCICommand.leSetAddressResolutionEnable(false))
        _ = try await host.send(HCICommand.leClearResolvingList())
        let size = await readResolvingListSize()
        var loaded: [ResolvingListEntry] = []
        var full = false
        for e in entries {
            if let size, loaded.count >= size { full = true; break }
            full = try await addToResolvingList(e)
            if full { break }
            loaded.append(e)
        }
        let left = Array(entries.dropFirst(loaded.count))
        if !left.isEmpty {
            options.logger.log(.info, "the resolving list is full after \(loaded.count) entries; \(left.count) more are resolved by the host")
        }
        var advertising = false
        if let localIRK {
            if !full, size.map({ loaded.count < $0 }) ?? true {
                advertising = try await !addToResolvingList(.advertising(localIRK: localIRK))
            }
            options.logger.log(.debug, advertising
                ? "the local IRK is on the resolving list: the controller makes the advertising sets' resolvable private addresses"
                : "no room for the local IRK on the resolving list: the host makes the advertising sets' resolvable private addresses")
        }
        if let privateAddressTimeout { _ = try await host.send(HCICommand.leSetResolvablePrivateAddressTimeout(privateAddressTimeout)) }
        let enable = !loaded.isEmpty || advertising
        _ = try await host.send(HCICommand.leSetAddressResolutionEnable(enable))
        setControllerGeneratesPrivateAddresses(loaded.contains { $0.localIRK != nil })
        ownAddress.advertisingIRKOnList = advertising
        return ResolvingListLoad(isEnabled: enable, loaded: loaded, notLoaded: left, controllerMakesAdvertisingAddresses: advertising)
    }

    /// LE Add Device To Resolving List; true when the list is full (Memory Capacity
    /// Exceeded, 0x07) and `entry` was not added.
    private func addToResolvingList(_ entry: ResolvingListEntry) async throws(HCIError) -> Bool {
        do throws(HCIError) {
            _ = try await host.send(HCICommand.leAddDeviceToResolvingList(entry))
            return false
        } catch {
            guard case .commandFailed(_, let status) = error, status.rawValue == 0x07 else { throw error }
            return true
        }
    }

    /// LE Read Resolving List Size (7.8.41); nil when the controller does not answer it.
    private func readResolvingListSize() async -> Int? {
        guard let rp = try? await host.send(HCICommand.leReadResolvingListSize()), rp.count >= 2 else { return nil }
        return Int(rp[1])
    }
}

/// What `Central.loadResolvingList` did.
public struct ResolvingListLoad: Sendable, Hashable {
    /// The controller resolves now: it has LL Privacy and at least one entry is on its list.
    public var isEnabled: Bool
    /// The entries on the controller's list.
    public var loaded: [ResolvingListEntry]
    /// The entries that did not fit (or all of them without LL Privacy): the host's resolver
    /// still resolves their addresses in scan reports.
    public var notLoaded: [ResolvingListEntry]
    /// The local IRK given for advertising is on the list: the controller makes the
    /// resolvable private addresses of advertising sets started from now on.
    public var controllerMakesAdvertisingAddresses = false
}

/// The resolving list commands (Vol 4, Part E, 7.8.38, 7.8.40, 7.8.41, 7.8.44, 7.8.45).
extension HCICommand {
    /// HCI_LE_Add_Device_To_Resolving_List (0x2027): Peer_Identity_Address_Type,
    /// Peer_Identity_Address, Peer_IRK, Local_IRK (all zero: none), keys least significant first.
    public static func leAddDeviceToResolvingList(_ entry: ResolvingListEntry) -> HCICommandPacket {
        var p: [UInt8] = [entry.identity.type.isRandom ? 0x01 : 0x00]
        p += entry.identity.address.littleEndianBytes
        p.appendLE(entry.peerIRK)
        p.appendLE(entry.localIRK ?? 0)
        return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2027), parameters: p)
    }
    /// HCI_LE_Clear_Resolving_List (0x2029).
    public static func leClearResolvingList() -> HCICommandPacket { HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2029)) }
    /// HCI_LE_Read_Resolving_List_Size (0x202A, 7.8.41).
    public static func leReadResolvingListSize() -> HCICommandPacket { HCICommandPacket(opcode: HCIOpcode(rawValue: 0x202A)) }
    /// HCI_LE_Set_Resolvable_Private_Address_Timeout (0x202E, 7.8.45): RPA_Timeout in
    /// seconds, 0x0001 to 0x0E10 (1 s to 1 hour; `timeout` is clamped to that).
    public static func leSetResolvablePrivateAddressTimeout(_ timeout: Duration) -> HCICommandPacket {
        let seconds = UInt16(max(1, min(3600, timeout.components.seconds)))
        return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x202E), parameters: [UInt8(seconds & 0xFF), UInt8(seconds >> 8)])
    }
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
