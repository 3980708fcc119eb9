import Testing
@testable import BLETestSupport
import BLECore
@testable import SMP
import BLEWire

/// Resolvable private addresses (Vol 6, Part B, 1.3.2.2 and 1.3.2.3) made from the sample
/// IRK of Vol 3, Part H, Appendix D.7 (IRK ec0234a3 57c8ad05 341010a6 0a397d9b,
/// prand 708194, ah = 0dfbaa): the address 70:81:94:0D:FB:AA.
@Suite(.timeLimit(.minutes(1)))
struct AddressResolutionTests {
    static let irk = u128("ec0234a3 57c8ad05 341010a6 0a397d9b")
    static let rpa = LEAddress(BluetoothAddress(rawValue: 0x70_81_94_0D_FB_AA), type: .random)
    static let identity = LEAddress(BluetoothAddress(rawValue: 0xC4_00_00_00_00_07), type: .random)
    static var bond: Bond {
        Bond(peer: identity, identityAddress: identity,
             longTermKey: LongTermKey(key: 0x42, ediv: 0, rand: 0, keySize: 16, authenticated: false, secureConnections: true),
             identityResolvingKey: irk)
    }

    @Test func sampleAddressResolvesWithItsIRKOnly() throws {
        #expect(Self.rpa.randomKind == .resolvablePrivate)
        #expect(ResolvablePrivateAddress.resolves(Self.rpa, irk: Self.irk))
        #expect(!ResolvablePrivateAddress.resolves(Self.rpa, irk: Self.irk ^ 1))
        // The same bits as a public address, or one hash bit changed, do not resolve.
        #expect(!ResolvablePrivateAddress.resolves(LEAddress(Self.rpa.address, type: .public), irk: Self.irk))
        #expect(!ResolvablePrivateAddress.resolves(LEAddress(BluetoothAddress(rawValue: 0x70_81_94_0D_FB_AB), type: .random), irk: Self.irk))
        #expect(try ResolvablePrivateAddress.make(irk: Self.irk, prand: 0x708194) == Self.rpa)
    }

    @Test func bondStoreFindsABondByAnAddressItsIRKResolves() throws {
        let store = MemoryBondStore([Self.bond])
        #expect(store.bond(resolving: Self.rpa) == Self.bond)
        #expect(store.addressResolver(Self.rpa) == Self.identity)
        let other = try ResolvablePrivateAddress.make(irk: Self.irk ^ 0xFF, prand: 0x123456)
        #expect(store.bond(resolving: other) == nil)
        #expect(store.addressResolver(other) == nil)
        #expect(store.resolvingListEntries == [ResolvingListEntry(identity: Self.identity, peerIRK: Self.irk)])
    }

    /// A bonded peer advertising at two successive RPAs is discovered under one identity.
    @Test func scanResultsCarryTheIdentityOfARotatingPeer() async throws {
        let vc = VirtualController()
        let second = try ResolvablePrivateAddress.make(irk: Self.irk, prand: 0x2A_BCDE)
        let stranger = LEAddress(BluetoothAddress(rawValue: 0xC4_00_00_00_00_99), type: .random)
        for a in [Self.rpa, second, stranger] { vc.addPeripheral(SimulatedPeripheral(address: a, advertisingData: [0x02, 0x01, 0x06])) }
        let central = try await vc.poweredOnCentral()
        await central.setAddressResolver(MemoryBondStore([Self.bond]).addressResolver)
        let stream = await central.scan()
        let collect = Task { () -> [BluetoothAddress: LEAddress?] in
            var seen: [BluetoothAddress: LEAddress?] = [:]
            for try await event in stream {
                guard case .discovered(let p) = event else { continue }
                seen[p.address.address] = p.identityAddress
                if seen.count == 3 { break }
            }
            return seen
        }
        // Each advertises every 100 ms of virtual time, once the controller scans: the scan
        // starts when the task above first iterates, which can come after a settle.
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200C)) // LE Set Scan Enable
        await vc.settle()
        await vc.advance(by: .milliseconds(250))
        let seen = try await collect.value
        #expect(seen[Self.rpa.address] == .some(Self.identity))
        #expect(seen[second.address] == .some(Self.identity))
        #expect(seen[stranger.address] == .some(nil))
        await central.close()
    }

    /// HCI_LE_Add_Device_To_Resolving_List (Vol 4, Part E, 7.8.38): type, identity address,
    /// peer IRK, local IRK, multi-octet fields least significant octet first; resolution is
    /// turned off while the list changes and on afterwards (7.8.44).
    @Test func resolvingListIsLoadedWhenTheControllerHasLLPrivacy() async throws {
        var options = VirtualController.Options()
        options.leFeatures.insert(.llPrivacy)
        let vc = VirtualController(options: options)
        for opcode: UInt16 in [0x2027, 0x2029, 0x202D] {
            vc.answer(HCIOpcode(rawValue: opcode), with: .events({ c in [HCIEventPacket(code: 0x0E, parameters: [0x01] + c.opcode.rawValue.littleEndianPair + [0x00])] }))
        }
        let central = try await vc.poweredOnCentral()
        #expect(try await central.loadResolvingList(MemoryBondStore([Self.bond]).resolvingListEntries).isEnabled)
        #expect(try await vc.waitForCommand(HCIOpcode(rawValue: 0x202D)).parameters == [0x00])
        #expect(try await vc.waitForCommand(HCIOpcode(rawValue: 0x2029)).parameters == [])
        let add = try await vc.waitForCommand(HCIOpcode(rawValue: 0x2027))
        #expect(add.parameters == [0x01, 0x07, 0x00, 0x00, 0x00, 0x00, 0xC4]
                + hex("ec0234a3 57c8ad05 341010a6 0a397d9b").reversed() + [UInt8](repeating: 0, count: 16))
        #expect(try await vc.waitForCommand(HCIOpcode(rawValue: 0x202D), count: 2).parameters == [0x01])
        await central.close()
    }

    @Test func noResolvingListWithoutLLPrivacy() async throws {
        let vc = VirtualController()
        let central = try await vc.poweredOnCentral()
        #expect(try await central.loadResolvingList(MemoryBondStore([Self.bond]).resolvingListEntries).isEnabled == false)
        await central.close()
    }
}

extension UInt16 {
    var littleEndianPair: [UInt8] { [UInt8(self & 0xFF), UInt8(self >> 8)] }
}
