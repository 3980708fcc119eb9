@testable import BLECore
@testable import BLETransport
import Glibc
import Testing
import BLEWire

/// What `KernelSecurityWatch.Tracker` reads from the HCI monitor, byte for byte. Bytes from
/// the Core Specification 5.4: LE Connection Complete is event 0x3E, subevent 0x01, with
/// Status, Connection_Handle (2), Role, Peer_Address_Type, Peer_Address (6, least significant
/// first), Connection_Interval (2), Peripheral_Latency (2), Supervision_Timeout (2),
/// Central_Clock_Accuracy (Vol 4, Part E, 7.7.65.1); Encryption Change is event 0x08 with
/// Status, Connection_Handle (2), Encryption_Enabled (7.7.8); an SMP PDU rides in a basic
/// L2CAP frame, Length (2) and Channel ID 0x0006 (Vol 3, Part A, 2.1 and 3.1), and Pairing
/// Failed is code 0x05 with one reason octet (Vol 3, Part H, 3.5.5).
@Suite("KernelSecurityWatch: the failure of a link's security in HCI traffic")
struct KernelSecurityWatchTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xF0_00_00_00_4B_45), type: .random)
    static let local = BluetoothAddress(rawValue: 0xC0_00_00_00_00_01)

    /// LE Connection Complete, handle 0x0001, central, random peer F0:00:00:00:4B:45.
    static let connected = HCIPacket.event(HCIEventPacket(code: 0x3E, parameters: [
        0x01, 0x00, 0x01, 0x00, 0x00, 0x01, 0x45, 0x4B, 0x00, 0x00, 0x00, 0xF0, 0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00,
    ]))

    static func smp(_ bytes: [UInt8], handle: UInt16 = 0x0001) -> HCIPacket {
        .acl(ACLDataPacket(handle: handle, boundary: .firstFlushable, data: [UInt8(bytes.count), 0x00, 0x06, 0x00] + bytes))
    }

    static func tracker(adapterAt index: Int = 0) -> KernelSecurityWatch.Tracker {
        var t = KernelSecurityWatch.Tracker(peer: peer, adapter: local)
        #expect(t.step(.adapterAdded(adapter: index, address: local, name: "hci\(index)", bus: "Virtual")) == nil)
        return t
    }

    @Test("Pairing Failed 05 04 received on the link: Confirm Value Failed from the peer; sent: from the kernel")
    func pairingFailed() {
        var t = Self.tracker()
        #expect(t.step(.packet(adapter: 0, direction: .received, packet: Self.connected, timestamp: 0)) == nil)
        #expect(t.step(.packet(adapter: 0, direction: .received, packet: Self.smp([0x05, 0x04]), timestamp: 0)) == .pairingFailed(.confirmValueFailed, byPeer: true))
        #expect(t.step(.packet(adapter: 0, direction: .sent, packet: Self.smp([0x05, 0x03]), timestamp: 0)) == .pairingFailed(.authenticationRequirements, byPeer: false))
        // Other SMP PDUs (Pairing Confirm 0x03) and other links say nothing.
        #expect(t.step(.packet(adapter: 0, direction: .received, packet: Self.smp([0x03] + Array(repeating: 0, count: 16)), timestamp: 0)) == nil)
        #expect(t.step(.packet(adapter: 0, direction: .received, packet: Self.smp([0x05, 0x04], handle: 0x0002), timestamp: 0)) == nil)
        #expect(t.step(.packet(adapter: 1, direction: .received, packet: Self.smp([0x05, 0x04]), timestamp: 0)) == nil)
    }

    @Test("Encryption Change 06 01 00 00: PIN or Key Missing; before the link is known, nothing")
    func encryptionFailed() {
        let change = HCIPacket.event(HCIEventPacket(code: 0x08, parameters: [0x06, 0x01, 0x00, 0x00]))
        var t = Self.tracker()
        #expect(t.step(.packet(adapter: 0, direction: .received, packet: change, timestamp: 0)) == nil)
        #expect(t.step(.packet(adapter: 0, direction: .received, packet: Self.connected, timestamp: 0)) == nil)
        #expect(t.step(.packet(adapter: 0, direction: .received, packet: change, timestamp: 0)) == .encryptionFailed(.pinOrKeyMissing))
        let success = HCIPacket.event(HCIEventPacket(code: 0x08, parameters: [0x00, 0x01, 0x00, 0x01]))
        #expect(t.step(.packet(adapter: 0, direction: .received, packet: success, timestamp: 0)) == nil)
    }

    @Test("The error names the peer and the SMP reason, or the lost bond and how to pair again")
    func errorText() {
        let wrong = L2CAPSocketError.securityFailed(peer: "\(Self.peer)", requested: .authenticated, failure: .pairingFailed(.confirmValueFailed, byPeer: true), errno: nil)
        #expect("\(wrong)".hasPrefix("Confirm Value Failed (0x04) pairing with \(Self.peer) for '\(SecurityLevel.authenticated)': the peer ended the pairing; the keys did not match"))
        let forgot = L2CAPSocketError.securityFailed(peer: "\(Self.peer)", requested: .encrypted, failure: .encryptionFailed(.pinOrKeyMissing), errno: EACCES)
        #expect("\(forgot)".hasPrefix("\(Self.peer) no longer has the bond: encryption with the kernel's stored key for '\(SecurityLevel.encrypted)' failed with PIN or Key Missing (0x06)"))
        #expect("\(forgot)".contains("HCIAdapters.removeBond(index:peer:)"))
    }
}
