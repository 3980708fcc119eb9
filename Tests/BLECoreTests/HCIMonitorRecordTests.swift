@testable import BLECore
@testable import BLETransport
import Testing
import BLEWire

/// Records of the kernel's HCI monitor channel, in the layout of the kernel's
/// include/net/bluetooth/hci_mon.h (opcode, adapter index, length, 2 octets each,
/// little-endian), carrying HCI packets of the Core Specification: HCI_Reset (Vol 4, Part E,
/// 7.3.2) and its Command Complete (7.7.14).
@Suite struct HCIMonitorRecordTests {
    static let t: Int64 = 1_000

    func event(_ bytes: [UInt8]) -> HCIMonitor.Event? { HCIMonitor.event(record: bytes[...], timestamp: Self.t) }

    @Test func newIndexNamesTheAdapter() {
        // type 0 (primary), bus 0 (Virtual), bdaddr C0:00:00:00:00:01 little-endian, name "hci0".
        let record: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0xC0]
            + Array("hci0".utf8) + [0, 0, 0, 0]
        #expect(event(record) == .adapterAdded(adapter: 0, address: BluetoothAddress(rawValue: 0xC0_00_00_00_00_01), name: "hci0", bus: "Virtual"))
    }

    @Test func packetsKeepTheirAdapterAndDirection() throws {
        guard case .packet(1, .sent, .command(let c), Self.t)? = event([0x02, 0x00, 0x01, 0x00, 0x03, 0x00, 0x03, 0x0C, 0x00]) else {
            Issue.record("HCI_Reset on hci1 not decoded")
            return
        }
        #expect(c.opcode.rawValue == 0x0C03)
        guard case .packet(0, .received, .event(let e), _)? = event([0x03, 0x00, 0x00, 0x00, 0x06, 0x00, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]) else {
            Issue.record("Command Complete not decoded")
            return
        }
        #expect(e.code == 0x0E && e.parameters == [0x01, 0x03, 0x0C, 0x00])
        // ACL RX (5): handle 0x0040, 4 bytes of L2CAP header and nothing else.
        guard case .packet(0, .received, .acl(let a), _)? = event([0x05, 0x00, 0x00, 0x00, 0x08, 0x00, 0x40, 0x20, 0x04, 0x00, 0x00, 0x00, 0x04, 0x00]) else {
            Issue.record("ACL not decoded")
            return
        }
        #expect(a.handle == 0x0040)
    }

    @Test func adapterLifecycleAndNotes() {
        #expect(event([0x01, 0x00, 0x02, 0x00, 0x00, 0x00]) == .adapterRemoved(adapter: 2))
        #expect(event([0x08, 0x00, 0x00, 0x00, 0x00, 0x00]) == .adapterOpened(adapter: 0))
        #expect(event([0x09, 0x00, 0x00, 0x00, 0x00, 0x00]) == .adapterClosed(adapter: 0))
        let note = Array("Bluetooth subsystem version 2.22".utf8) + [0]
        #expect(event([0x0C, 0x00, 0xFF, 0xFF, UInt8(note.count), 0x00] + note) == .note(adapter: nil, text: "Bluetooth subsystem version 2.22"))
        // User logging: priority 6, ident "bluetoothd" (11 with its NUL), message.
        let log: [UInt8] = [0x06, 0x0B] + Array("bluetoothd".utf8) + [0] + Array("started".utf8) + [0]
        #expect(event([0x0D, 0x00, 0x00, 0x00, UInt8(log.count), 0x00] + log) == .note(adapter: 0, text: "bluetoothd: started"))
    }

    @Test func shortAndUnknownRecordsNeverTrap() {
        #expect(event([]) == nil)
        #expect(event([0x02, 0x00, 0x00]) == nil)
        // Index info (10) is of no interest.
        #expect(event([0x0A, 0x00, 0x00, 0x00, 0x00, 0x00]) == nil)
        // A command record whose payload is cut: undecodable, with its bytes.
        guard case .undecodable(0, 2, [0x03], _)? = event([0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x03]) else {
            Issue.record("a cut command was not reported undecodable")
            return
        }
        // New index shorter than its 16 bytes, user logging with an ident length past the end.
        #expect(event([0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00]) == nil)
        #expect(event([0x0D, 0x00, 0x00, 0x00, 0x03, 0x00, 0x06, 0xFF, 0x41]) == .note(adapter: 0, text: "A"))
    }
}
