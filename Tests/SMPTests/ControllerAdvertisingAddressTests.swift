import Testing
import BLECore
import BLETestSupport
import BLEWire
import SMP

/// Resolvable private addresses the controller makes for advertising sets (LL Privacy, Vol 6,
/// Part B, 6.4): the local IRK on the resolving list under peer identity 00:00:00:00:00:00
/// (LE Add Device To Resolving List, Vol 4, Part E, 7.8.38), address resolution on (7.8.44),
/// and Own_Address_Type 0x03 with Peer_Address_Type 0x00 and Peer_Address 00:00:00:00:00:00
/// naming that entry in LE Set Extended Advertising Parameters (7.8.53) or LE Set Advertising
/// Parameters (7.8.5). The virtual controller makes the address with SMP's `ah`, and the
/// link's own address is the Local_Resolvable_Private_Address of LE Enhanced Connection
/// Complete (7.7.65.10). Without LL Privacy or without room on the list the host makes them.
///
/// The IRK, prand and address are the ah test vector of Vol 3, Part H, Appendix D.7: IRK
/// ec0234a357c8ad05341010a60a397d9b, prand 0x708194, ah = 0x0dfbaa: 70:81:94:0D:FB:AA.
@Suite(.timeLimit(.minutes(1)))
struct ControllerAdvertisingAddressTests {
    static let irk: UInt128 = 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B
    static let irkBytes = [UInt8](hex: "9b7d390aa6101034 05adc857a33402ec")!
    static let controllerAddress = BluetoothAddress(rawValue: 0x70_81_94_0D_FB_AA)
    /// What the host would make (and what the controller falls back to without an entry).
    static let hostAddress = BluetoothAddress(rawValue: 0x4A_11_22_33_44_55)
    static let remoteCentral = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
    static let data = AdvertisingData([.flags([.leGeneralDiscoverable, .brEDRNotSupported])])
    static let ownAddress = OwnAddress.resolvablePrivate(rotation: .seconds(900)) { hostAddress }

    static func stack(extended: Bool = true, privacy: Bool = true, listSize: UInt8 = 8) async throws -> (VirtualController, Central) {
        var options = VirtualController.Options()
        if extended { options.leFeatures.insert(.leExtendedAdvertising) }
        if privacy { options.leFeatures.insert(.llPrivacy) }
        options.resolvingListSize = listSize
        options.connectionCompleteEvent = extended ? .enhancedV2 : .enhancedV1
        options.makeResolvablePrivateAddress = { irk in
            (try? ResolvablePrivateAddress.make(irk: irk, prand: 0x70_8194))?.address ?? .zero
        }
        let vc = VirtualController(options: options)
        let central = try await vc.poweredOnCentral()
        return (vc, central)
    }

    static func sent(_ vc: VirtualController, _ opcode: UInt16) -> [[UInt8]] {
        vc.commandsReceived.filter { $0.opcode.rawValue == opcode }.map(\.parameters)
    }

    @Test func theLocalIRKOnTheListMakesTheControllerMakeAnExtendedSetsAddresses() async throws {
        let (vc, central) = try await Self.stack()
        let load = try await central.loadResolvingList([], localIRK: Self.irk)
        #expect(load.isEnabled && load.controllerMakesAdvertisingAddresses)
        // Peer_Identity_Address_Type 0x00, Peer_Identity_Address 00:00:00:00:00:00, Peer_IRK zero, Local_IRK.
        #expect(Self.sent(vc, 0x2027) == [[0x00] + [UInt8](repeating: 0, count: 6) + [UInt8](repeating: 0, count: 16) + Self.irkBytes])
        #expect(Self.sent(vc, 0x202D) == [[0x00], [0x01]])
        #expect(vc.resolvingListEntries == [.advertising(localIRK: Self.irk)])

        var incoming = await central.incomingConnections().makeAsyncIterator()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(format: .extended, ownAddress: Self.ownAddress))
        #expect(set.controllerMakesAddresses)
        // Handle 0, connectable (0x0001), 100 ms (0x0000A0) twice, channels 0x07, Own_Address_Type
        // 0x03, Peer_Address_Type 0x00, Peer_Address zero, filter 0x00, TX power 0x7F (no
        // preference), LE 1M, skip 0, LE 1M, SID 0, no scan request notifications.
        #expect(Self.sent(vc, 0x2036) == [[0x00, 0x01, 0x00, 0xA0, 0x00, 0x00, 0xA0, 0x00, 0x00, 0x07, 0x03, 0x00]
                                          + [UInt8](repeating: 0, count: 6) + [0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00]])
        // The host's address is still set: the controller uses it only when no entry matches.
        #expect(Self.sent(vc, 0x2035) == [[0x00, 0x55, 0x44, 0x33, 0x22, 0x11, 0x4A]])
        let advertised = try #require(vc.advertisingSets.first)
        #expect(advertised.advertisingAddress == LEAddress(Self.controllerAddress, type: .random))
        #expect(advertised.controllerMadeAddress == Self.controllerAddress)

        try vc.connectFromCentral(Self.remoteCentral)
        let link = try #require(await incoming.next())
        // SMP takes this side's address from the link: the one the controller made.
        let local = try #require(await link.localAddress)
        #expect(local == LEAddress(Self.controllerAddress, type: .random))
        #expect(ResolvablePrivateAddress.resolves(local, irk: Self.irk))
        await central.close()
    }

    @Test func theHostDoesNotRotateAnAddressTheControllerMakes() async throws {
        let (vc, central) = try await Self.stack()
        try await central.loadResolvingList([], localIRK: Self.irk)
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(format: .extended, ownAddress: Self.ownAddress))
        let started = vc.commandsReceived.count
        // A host-made address would be renewed now (disable, new address, enable).
        await vc.advance(by: .seconds(900))
        try await set.stop()
        // Only the stop: LE Set Extended Advertising Enable (disable set 0), LE Remove Advertising Set.
        #expect(vc.commandsReceived.dropFirst(started).map(\.opcode.rawValue) == [0x2039, 0x203C])
        await central.close()
    }

    @Test func aLegacySetUsesOwnAddressType0x03WithTheLegacyCommands() async throws {
        let (vc, central) = try await Self.stack(extended: false)
        try await central.loadResolvingList([], localIRK: Self.irk)
        var incoming = await central.incomingConnections().makeAsyncIterator()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(ownAddress: Self.ownAddress))
        #expect(set.controllerMakesAddresses)
        // LE Set Random Address with the fallback, then 7.8.5: intervals 0x00A0, ADV_IND,
        // Own_Address_Type 0x03, Peer_Address_Type 0x00, Peer_Address zero, channels, filter.
        #expect(Self.sent(vc, 0x2005) == [[0x55, 0x44, 0x33, 0x22, 0x11, 0x4A]])
        #expect(Self.sent(vc, 0x2006) == [[0xA0, 0x00, 0xA0, 0x00, 0x00, 0x03, 0x00] + [UInt8](repeating: 0, count: 6) + [0x07, 0x00]])
        #expect(vc.advertisingSets.first?.advertisingAddress == LEAddress(Self.controllerAddress, type: .random))
        try vc.connectFromCentral(Self.remoteCentral)
        let link = try #require(await incoming.next())
        #expect(await link.localAddress == LEAddress(Self.controllerAddress, type: .random))
        await central.close()
    }

    @Test func aFullListLeavesTheAddressesToTheHost() async throws {
        let (vc, central) = try await Self.stack(listSize: 1)
        let peer = ResolvingListEntry(identity: LEAddress(BluetoothAddress(rawValue: 0xC4_00_00_00_00_01), type: .random), peerIRK: Self.irk)
        let load = try await central.loadResolvingList([peer], localIRK: Self.irk)
        #expect(load.loaded == [peer])
        #expect(!load.controllerMakesAdvertisingAddresses)
        // One add only: LE Read Resolving List Size said 1.
        #expect(Self.sent(vc, 0x2027).count == 1)
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(format: .extended, ownAddress: Self.ownAddress))
        #expect(!set.controllerMakesAddresses)
        // Own_Address_Type 0x01: the set's random address, made by the host.
        #expect(Self.sent(vc, 0x2036).first?[10] == 0x01)
        #expect(vc.advertisingSets.first?.advertisingAddress == LEAddress(Self.hostAddress, type: .random))
        #expect(await set.address == LEAddress(Self.hostAddress, type: .random))
        await central.close()
    }

    @Test func anAddRefusedWithMemoryCapacityExceededLeavesTheAddressesToTheHost() async throws {
        let (vc, central) = try await Self.stack()
        // Memory Capacity Exceeded (0x07) for the add, though the size said 8.
        vc.answer(HCIOpcode(rawValue: 0x2027), with: .status(HCIStatus(rawValue: 0x07)), times: 1)
        let load = try await central.loadResolvingList([], localIRK: Self.irk)
        #expect(!load.isEnabled && !load.controllerMakesAdvertisingAddresses)
        #expect(Self.sent(vc, 0x202D) == [[0x00], [0x00]])
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(format: .extended, ownAddress: Self.ownAddress))
        #expect(!set.controllerMakesAddresses)
        #expect(Self.sent(vc, 0x2036).first?[10] == 0x01)
        await central.close()
    }

    @Test func withoutLLPrivacyNothingIsSentAndTheHostMakesTheAddresses() async throws {
        let (vc, central) = try await Self.stack(privacy: false)
        let load = try await central.loadResolvingList([], localIRK: Self.irk)
        #expect(!load.isEnabled && !load.controllerMakesAdvertisingAddresses)
        #expect(vc.commandsReceived.filter { (0x2027...0x202E).contains($0.opcode.rawValue) }.isEmpty)
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(format: .extended, ownAddress: Self.ownAddress))
        #expect(!set.controllerMakesAddresses)
        #expect(Self.sent(vc, 0x2036).first?[10] == 0x01)
        await central.close()
    }

    @Test func staticAndPublicSetsIgnoreTheEntry() async throws {
        let (vc, central) = try await Self.stack()
        try await central.loadResolvingList([], localIRK: Self.irk)
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(kind: .nonConnectable, format: .extended))
        #expect(!set.controllerMakesAddresses)
        #expect(Self.sent(vc, 0x2036).first?[10] == 0x00)
        await central.close()
    }
}
