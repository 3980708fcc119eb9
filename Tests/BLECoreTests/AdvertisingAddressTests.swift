import Testing
import BLECore
import BLETestSupport
import BLEWire

/// The addresses advertising sets and peripheral links use (Vol 6, Part B, 1.3): a static
/// random address through LE Set Advertising Set Random Address (Vol 4, Part E, 7.8.52) or LE
/// Set Random Address (7.8.4), resolvable private addresses renewed every rotation with the set
/// disabled around the change (7.8.56, 7.8.9), and this side's address on a link a central made
/// to a set, which SMP uses.
@Suite(.timeLimit(.minutes(1)))
struct AdvertisingAddressTests {
    static let data = PeripheralRoleTests.data
    static let staticAddress = BluetoothAddress(rawValue: 0xC5_04_03_02_01_00)
    /// Resolvable private addresses (the two most significant bits 0b01): the first is the
    /// one of the ah test vector, Vol 3, Part H, Appendix D.7 (prand 0x708194, hash 0x0DFBAA).
    static let privateAddresses = [BluetoothAddress(rawValue: 0x70_81_94_0D_FB_AA), BluetoothAddress(rawValue: 0x4A_11_22_33_44_55)]

    /// The commands that make, change and enable sets (without the controller limit reads,
    /// 0x203A and 0x203B), in order.
    static func setCommands(_ vc: VirtualController) -> [HCICommandPacket] {
        PeripheralRoleTests.advertisingCommands(vc).filter { ![0x203A, 0x203B].contains($0.opcode.rawValue) }
    }

    static func rotating() -> OwnAddress {
        let counter = Counter()
        return .resolvablePrivate(rotation: .seconds(900)) { privateAddresses[counter.next() % 2] }
    }

    @Test func anExtendedSetWithAStaticRandomAddressSetsItAfterItsParameters() async throws {
        let (vc, central) = try await PeripheralRoleTests.extendedStack()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(kind: .nonConnectable, format: .extended, ownAddress: .staticRandom(Self.staticAddress)))
        let sent = Self.setCommands(vc)
        try #require(sent.map(\.opcode.rawValue) == [0x2036, 0x2035, 0x2037, 0x2039])
        // 7.8.53: Own_Address_Type follows the handle, the properties, both intervals and the channel map.
        #expect(sent[0].parameters[10] == 0x01)
        // 7.8.52: Advertising_Handle, then Random_Address least significant octet first.
        #expect(sent[1].parameters == [0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0xC5])
        #expect(await set.address == LEAddress(Self.staticAddress, type: .random))
        #expect(vc.advertisingSets.first?.randomAddress == Self.staticAddress)
    }

    @Test func anAddressWithoutTheStaticBitsIsRefusedBeforeAnyCommand() async throws {
        let (vc, central) = try await VC.stack()
        let bad = BluetoothAddress(rawValue: 0x45_04_03_02_01_00)
        await #expect(throws: AdvertisingError.invalidParameter(field: "ownAddress", reason: OwnAddressError.notStaticRandom(bad).description)) {
            try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(ownAddress: .staticRandom(bad)))
        }
        #expect(Self.setCommands(vc).isEmpty)
    }

    @Test func anExtendedSetTakesANewPrivateAddressEveryRotationDisabledAroundTheChange() async throws {
        let (vc, central) = try await PeripheralRoleTests.extendedStack()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(format: .extended, ownAddress: Self.rotating()))
        #expect(await set.address == LEAddress(Self.privateAddresses[0], type: .random))
        let before = Self.setCommands(vc).count
        await vc.advance(by: .seconds(900))
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x2039), count: 3)
        let rotation = Array(Self.setCommands(vc).dropFirst(before))
        try #require(rotation.map(\.opcode.rawValue) == [0x2039, 0x2035, 0x2039])
        // Disable set 0 (7.8.56: Enable, Num_Sets, handle, Duration, Max_Extended_Advertising_Events).
        #expect(rotation[0].parameters == [0x00, 0x01, 0x00, 0x00, 0x00, 0x00])
        #expect(rotation[1].parameters == [0x00, 0x55, 0x44, 0x33, 0x22, 0x11, 0x4A])
        #expect(rotation[2].parameters == [0x01, 0x01, 0x00, 0x00, 0x00, 0x00])
        #expect(vc.advertisingSets.first?.randomAddress == Self.privateAddresses[1])
        #expect(vc.advertisingSets.first?.isEnabled == true)
        #expect(await set.address == LEAddress(Self.privateAddresses[1], type: .random))
    }

    @Test func aLegacySetTakesANewPrivateAddressWithLESetRandomAddress() async throws {
        let (vc, central) = try await VC.stack()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(ownAddress: Self.rotating()))
        let start = Self.setCommands(vc)
        try #require(start.map(\.opcode.rawValue) == [0x2005, 0x2006, 0x2008, 0x2009, 0x200A])
        #expect(start[0].parameters == [0xAA, 0xFB, 0x0D, 0x94, 0x81, 0x70])
        // 7.8.5: Own_Address_Type after the intervals and the advertising type.
        #expect(start[1].parameters[5] == 0x01)
        await vc.advance(by: .seconds(900))
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200A), count: 3)
        let rotation = Array(Self.setCommands(vc).dropFirst(start.count))
        #expect(rotation.map(\.opcode.rawValue) == [0x200A, 0x2005, 0x200A])
        #expect(rotation.map(\.parameters) == [[0x00], [0x55, 0x44, 0x33, 0x22, 0x11, 0x4A], [0x01]])
        #expect(await set.address == LEAddress(Self.privateAddresses[1], type: .random))
    }

    @Test func aSetWaitingForItsLinkOnlyChangesItsAddress() async throws {
        let (vc, central) = try await PeripheralRoleTests.extendedStack()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(format: .extended, ownAddress: Self.rotating(), resumeAfterDisconnect: true))
        var events = await set.events().makeAsyncIterator()
        try vc.connectFromCentral(PeripheralRoleTests.remoteCentral)
        guard case .connected? = await events.next() else { Issue.record("no .connected event"); return }
        let before = Self.setCommands(vc).count
        await vc.advance(by: .seconds(900))
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x2035), count: 2)
        #expect(Self.setCommands(vc).dropFirst(before).map(\.opcode.rawValue) == [0x2035])
        #expect(vc.advertisingSets.first?.isEnabled == false)
    }

    @Test func aPeripheralLinkHasTheAddressItsSetAdvertisedWith() async throws {
        let (vc, central) = try await PeripheralRoleTests.extendedStack { $0.connectionCompleteEvent = .enhancedV2 }
        let link = try await vc.acceptConnection(on: central, advertising: Self.data, parameters: AdvertisingParameters(format: .extended, ownAddress: .staticRandom(Self.staticAddress)),
                                                 from: PeripheralRoleTests.remoteCentral)
        #expect(await link.localAddress == LEAddress(Self.staticAddress, type: .random))
    }

    @Test func aLegacyPrivateSetGivesItsLinksItsCurrentAddress() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await vc.acceptConnection(on: central, advertising: Self.data, parameters: AdvertisingParameters(ownAddress: Self.rotating()),
                                                 from: PeripheralRoleTests.remoteCentral)
        #expect(await link.localAddress == LEAddress(Self.privateAddresses[0], type: .random))
    }

    @Test func aPublicSetGivesItsLinksThePublicAddress() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await vc.acceptConnection(on: central, advertising: Self.data, from: PeripheralRoleTests.remoteCentral)
        let adapter = try #require(await central.controllerInfo?.address)
        #expect(await link.localAddress == LEAddress(adapter, type: .public))
    }
}
