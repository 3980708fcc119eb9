@testable import BLECore
@testable import BLETransport
import Testing

/// When `kernelAppearances` reports adapter 0 back, from the monitor records the kernel sends
/// for a dongle plugged in again. Records in the layout of the kernel's
/// include/net/bluetooth/hci_mon.h: opcode, adapter index, payload length (2 octets each,
/// little-endian); opcodes New Index 0, Delete Index 1, Open Index 8, Close Index 9.
@Suite struct AdapterAppearanceFilterTests {
    /// New Index on adapter `index`: type 0 (primary), bus 1 (USB), bdaddr 00:1B:DC:0F:00:01
    /// little-endian, name "hci0" NUL-padded to 8 octets.
    static func newIndex(_ index: UInt8) -> [UInt8] {
        [0x00, 0x00, index, 0x00, 0x10, 0x00, 0x00, 0x01, 0x01, 0x00, 0x0F, 0xDC, 0x1B, 0x00] + Array("hci0".utf8) + [0, 0, 0, 0]
    }
    static let deleteIndex0: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0x00, 0x00]
    static let openIndex0: [UInt8] = [0x08, 0x00, 0x00, 0x00, 0x00, 0x00]
    static let closeIndex0: [UInt8] = [0x09, 0x00, 0x00, 0x00, 0x00, 0x00]
    static let closeIndex1: [UInt8] = [0x09, 0x00, 0x01, 0x00, 0x00, 0x00]

    /// Feeds the records through the monitor's decoder and the filter for adapter 0.
    static func appearances(_ records: [[UInt8]]) -> [Bool] {
        var filter = AdapterAppearanceFilter(adapter: 0)
        return records.map { record in
            guard let event = HCIMonitor.event(record: record[...], timestamp: 0) else { return false }
            return filter.isAppearance(event)
        }
    }

    @Test func newIndexAndTheCloseAfterTheSetupAreAppearances() {
        // Unplugged (Delete Index), plugged in (New Index), the kernel's setup (Open Index), its
        // auto power-off (Close Index), then a close of our own failed attempt.
        #expect(Self.appearances([Self.deleteIndex0, Self.newIndex(0), Self.openIndex0, Self.closeIndex0, Self.openIndex0, Self.closeIndex0])
                == [false, true, false, true, false, false])
    }

    @Test func otherAdaptersAndACloseWithoutARegistrationAreNot() {
        #expect(Self.appearances([Self.closeIndex0, Self.newIndex(1), Self.closeIndex1, Self.newIndex(0), Self.closeIndex1, Self.deleteIndex0, Self.closeIndex0])
                == [false, false, false, true, false, false, false])
    }
}
