import Testing
import Synchronization
import BLECore
import BLETestSupport
import BLEWire

/// The controller's resolving list (Core Spec 5.4 Vol 4, Part E): LE Read Resolving List Size
/// (7.8.41) bounds what is loaded, an add refused with Memory Capacity Exceeded (0x07, Vol 1,
/// Part F) ends the load without an error, LE Add Device To Resolving List (7.8.38) carries the
/// local IRK, LE Set Resolvable Private Address Timeout (7.8.45) the rotation in seconds.
@Suite(.timeLimit(.minutes(1)))
struct ResolvingListTests {
    static let peerIRK: UInt128 = 0xEC02_34A3_57C8_AD05_3410_10A6_0A39_7D9B
    static let localIRK: UInt128 = 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF
    static let entries = (1...3).map { i in
        ResolvingListEntry(identity: LEAddress(BluetoothAddress(rawValue: 0xC4_00_00_00_00_00 + UInt64(i)), type: .random), peerIRK: peerIRK, localIRK: localIRK)
    }

    /// Command Complete (Vol 4, Part E, 7.7.14): one credit, the opcode, the status, then `rest`.
    static func complete(_ c: HCICommandPacket, status: UInt8 = 0x00, _ rest: [UInt8] = []) -> [HCIEventPacket] {
        [HCIEventPacket(code: 0x0E, parameters: [0x01, UInt8(c.opcode.rawValue & 0xFF), UInt8(c.opcode.rawValue >> 8), status] + rest)]
    }

    static func controller(listSize: UInt8?, addsAccepted: Int = .max) -> VirtualController {
        var options = VirtualController.Options()
        options.leFeatures.insert(.llPrivacy)
        let vc = VirtualController(options: options)
        for opcode: UInt16 in [0x2029, 0x202D, 0x202E] {
            vc.answer(HCIOpcode(rawValue: opcode), with: .events({ c in complete(c) }))
        }
        if let listSize { vc.answer(HCIOpcode(rawValue: 0x202A), with: .events({ c in complete(c, [listSize]) })) }
        let adds = Mutex(0)
        vc.answer(HCIOpcode(rawValue: 0x2027), with: .events({ c in
            let n = adds.withLock { n in n += 1; return n }
            return complete(c, status: n <= addsAccepted ? 0x00 : 0x07)
        }))
        return vc
    }

    @Test func theListSizeBoundsTheLoadAndTheRestStaysWithTheHost() async throws {
        let vc = Self.controller(listSize: 2)
        let central = try await vc.poweredOnCentral()
        let load = try await central.loadResolvingList(Self.entries, privateAddressTimeout: .seconds(900))
        #expect(load.isEnabled)
        #expect(load.loaded == Array(Self.entries.prefix(2)))
        #expect(load.notLoaded == [Self.entries[2]])
        let sent = vc.commandsReceived.filter { (0x2027...0x202E).contains($0.opcode.rawValue) }
        #expect(sent.map(\.opcode.rawValue) == [0x202D, 0x2029, 0x202A, 0x2027, 0x2027, 0x202E, 0x202D])
        // Peer_Identity_Address_Type 0x01, Peer_Identity_Address, Peer_IRK, Local_IRK, least
        // significant octet first.
        #expect(sent[3].parameters == [0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0xC4]
                + [UInt8](hex: "9b7d390aa6101034 05adc857a33402ec")! + [UInt8](hex: "ffeeddccbbaa9988 7766554433221100")!)
        // RPA_Timeout 900 s = 0x0384.
        #expect(sent[5].parameters == [0x84, 0x03])
        #expect(sent[6].parameters == [0x01])
        await central.close()
    }

    @Test func memoryCapacityExceededEndsTheLoadWithoutAnError() async throws {
        let vc = Self.controller(listSize: nil, addsAccepted: 1)
        let central = try await vc.poweredOnCentral()
        let load = try await central.loadResolvingList(Self.entries)
        #expect(load.loaded == [Self.entries[0]])
        #expect(load.notLoaded == Array(Self.entries.dropFirst()))
        #expect(load.isEnabled)
        let sent = vc.commandsReceived.filter { (0x2027...0x202E).contains($0.opcode.rawValue) }
        // The size is not answered (an unknown command): the adds go on until the first 0x07.
        #expect(sent.map(\.opcode.rawValue) == [0x202D, 0x2029, 0x202A, 0x2027, 0x2027, 0x202D])
        #expect(sent.last?.parameters == [0x01])
        await central.close()
    }

    @Test func aTimeoutOutsideTheRangeIsClamped() {
        #expect(HCICommand.leSetResolvablePrivateAddressTimeout(.seconds(7200)).parameters == [0x10, 0x0E])
        #expect(HCICommand.leSetResolvablePrivateAddressTimeout(.zero).parameters == [0x01, 0x00])
    }
}
