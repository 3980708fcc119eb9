@testable import BLECore
@testable import BLETransport
import Testing
import BLEWire

/// The management-interface packets of `KernelPairingAgent` and the `HCIAdapters` pairing
/// commands, byte for byte. Formats from BlueZ doc/mgmt-api.txt: every packet is code,
/// controller index, parameter length (2 octets each, little-endian) and the parameters;
/// addresses are 6 octets least significant first and Address_Type (0x01 LE Public, 0x02 LE
/// Random). Events: New Long Term Key 0x000A, User Confirmation Request 0x000F, User Passkey
/// Request 0x0010, Passkey Notify 0x0017; commands: Set Bondable 0x0009, Set IO Capability
/// 0x0018, Unpair Device 0x001B, User Confirmation (Negative) Reply 0x001C/0x001D, User
/// Passkey (Negative) Reply 0x001E/0x001F.
@Suite("KernelPairingAgent management packets")
struct KernelPairingAgentTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xF0_00_00_00_48_52), type: .random)
    static let address: [UInt8] = [0x52, 0x48, 0x00, 0x00, 0x00, 0xF0, 0x02]
    /// 123456 as the management interface writes a passkey or value (4 octets).
    static let value: [UInt8] = [0x40, 0xE2, 0x01, 0x00]

    static func confirmationRequest(index: UInt8 = 0x00, hint: UInt8) -> [UInt8] {
        [0x0F, 0x00, index, 0x00, 0x0C, 0x00] + address + [hint] + value
    }

    @Test("User Confirmation Request: Confirm_Hint 1 is Just Works, 0 a numeric comparison with its value")
    func confirmationRequests() {
        #expect(KernelPairingAgent.event(Self.confirmationRequest(hint: 0x01)[...], index: 0) == .question(.justWorks(peer: Self.peer)))
        #expect(KernelPairingAgent.event(Self.confirmationRequest(hint: 0x00)[...], index: 0) == .question(.numericComparison(peer: Self.peer, value: 123_456)))
    }

    @Test("User Passkey Request and Passkey Notify")
    func passkeyEvents() {
        #expect(KernelPairingAgent.event(([0x10, 0x00, 0x00, 0x00, 0x07, 0x00] + Self.address)[...], index: 0) == .question(.passkey(peer: Self.peer)))
        #expect(KernelPairingAgent.event(([0x17, 0x00, 0x00, 0x00, 0x0C, 0x00] + Self.address + Self.value + [0x02])[...], index: 0)
            == .question(.displayPasskey(peer: Self.peer, passkey: 123_456, entered: 2)))
    }

    @Test("New Long Term Key: Store_Hint, Key_Type 0x03 (authenticated P-256) and Encryption_Size")
    func newLongTermKey() {
        let event: [UInt8] = [0x0A, 0x00, 0x00, 0x00, 0x25, 0x00, 0x01] + Self.address + [0x03, 0x01, 0x10, 0x00, 0x00]
            + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xA5, count: 16)
        #expect(KernelPairingAgent.event(event[...], index: 0)
            == .key(.init(peer: Self.peer, persistent: true, authenticated: true, secureConnections: true, keySize: 16)))
        var legacy = event
        legacy[6] = 0x00
        legacy[14] = 0x00
        legacy[16] = 0x07
        #expect(KernelPairingAgent.event(legacy[...], index: 0)
            == .key(.init(peer: Self.peer, persistent: false, authenticated: false, secureConnections: false, keySize: 7)))
    }

    @Test("Replies carry the address back; a passkey adds 4 octets; refusals are the negative replies")
    func replies() {
        let header: (UInt8, UInt8) -> [UInt8] = { code, length in [code, 0x00, 0x00, 0x00, length, 0x00] }
        #expect(KernelPairingAgent.reply(to: .justWorks(peer: Self.peer), answer: .confirm, index: 0) == header(0x1C, 0x07) + Self.address)
        #expect(KernelPairingAgent.reply(to: .justWorks(peer: Self.peer), answer: .refuse, index: 0) == header(0x1D, 0x07) + Self.address)
        #expect(KernelPairingAgent.reply(to: .numericComparison(peer: Self.peer, value: 1), answer: .confirm, index: 0) == header(0x1C, 0x07) + Self.address)
        #expect(KernelPairingAgent.reply(to: .passkey(peer: Self.peer), answer: .passkey(123_456), index: 0) == header(0x1E, 0x0B) + Self.address + Self.value)
        #expect(KernelPairingAgent.reply(to: .passkey(peer: Self.peer), answer: .refuse, index: 0) == header(0x1F, 0x07) + Self.address)
        // More than six digits is no passkey (Vol 3, Part H, 2.3.5.3: 0 to 999999).
        #expect(KernelPairingAgent.reply(to: .passkey(peer: Self.peer), answer: .passkey(1_000_000), index: 0) == header(0x1F, 0x07) + Self.address)
        #expect(KernelPairingAgent.reply(to: .displayPasskey(peer: Self.peer, passkey: 1, entered: 0), answer: .confirm, index: 0) == nil)
    }

    @Test("Other adapters, other events, BR/EDR peers and truncated events are not questions")
    func ignored() {
        #expect(KernelPairingAgent.event(Self.confirmationRequest(index: 0x01, hint: 0x01)[...], index: 0) == nil)
        // Command Complete (0x0001) for Set Low Energy on hci0.
        #expect(KernelPairingAgent.event([0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x0D, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00][...], index: 0) == nil)
        var bredr = Self.confirmationRequest(hint: 0x01)
        bredr[12] = 0x00
        #expect(KernelPairingAgent.event(bredr[...], index: 0) == nil)
        let request = Self.confirmationRequest(hint: 0x01)
        for length in 0..<request.count {
            #expect(KernelPairingAgent.event(request[..<length], index: 0) == nil)
        }
    }

    @Test("Set Bondable, Set IO Capability and Unpair Device (Disconnect 0x01) packets")
    func adapterCommands() {
        #expect(HCIAdapters.managementPacket(0x0009, index: 0, parameters: [0x01]) == [0x09, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01])
        #expect(HCIAdapters.managementPacket(0x0018, index: 1, parameters: [KernelPairingAgent.IOCapability.keyboardDisplay.rawValue])
            == [0x18, 0x00, 0x01, 0x00, 0x01, 0x00, 0x04])
        #expect(HCIAdapters.managementPacket(0x001B, index: 0, parameters: HCIAdapters.managementAddress(Self.peer) + [0x01])
            == [0x1B, 0x00, 0x00, 0x00, 0x08, 0x00] + Self.address + [0x01])
        let publicPeer = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_01), type: .public)
        #expect(HCIAdapters.managementAddress(publicPeer) == [0x01, 0x00, 0x00, 0x00, 0x00, 0xC0, 0x01])
        #expect(HCIAdapters.managementPeer(HCIAdapters.managementAddress(publicPeer)[...]) == publicPeer)
    }

    @Test("A refused management command names the command, the adapter and the status")
    func refusal() {
        #expect("\(TransportError.managementRefused(command: "Set Low Energy", device: "hci0", status: 0x0B))"
            == "the kernel refused Set Low Energy on hci0: management status 0x0B (Rejected)")
        #expect("\(TransportError.managementRefused(command: "Unpair Device", device: "hci0", status: 0x0F))".hasSuffix("status 0x0F (Not Powered)"))
        #expect("\(TransportError.managementRefused(command: "X", device: "hci0", status: 0x7F))".hasSuffix("(unknown status)"))
    }
}
