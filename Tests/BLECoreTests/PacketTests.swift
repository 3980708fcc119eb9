import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

@Suite struct PacketTests {
    // Core Spec Vol 4, Part E, 7.3.2: HCI_Reset, opcode 0x0C03, no parameters.
    @Test func resetCommandRoundTrip() throws {
        let bytes: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
        let p = try HCIPacket(h4: bytes)
        #expect(p == .command(HCICommandPacket(opcode: HCIOpcode(ogf: 0x03, ocf: 0x003))))
        #expect(p.h4 == bytes)
    }

    @Test func truncatedEventIsATypedError() {
        #expect(throws: DecodeError.self) { try HCIPacket(h4: [0x04, 0x0E, 0x04, 0x01]) }
        #expect(throws: DecodeError.self) { try HCIPacket(h4: [0x09]) }
        #expect(throws: DecodeError.self) { try HCIPacket(h4: []) }
    }

    @Test func aclHeaderFlags() throws {
        // Handle 0x0040, PB=10 (first flushable), BC=00, 2 bytes.
        let p = try HCIPacket(h4: [0x02, 0x40, 0x20, 0x02, 0x00, 0xAA, 0xBB])
        guard case .acl(let a) = p else { Issue.record("not ACL"); return }
        #expect(a.handle == 0x0040 && a.boundary == .firstFlushable && a.data == [0xAA, 0xBB])
        #expect(p.h4 == [0x02, 0x40, 0x20, 0x02, 0x00, 0xAA, 0xBB])
    }

    @Test func addressFormatting() throws {
        let a = try #require(BluetoothAddress("F0:F1:F2:F3:F4:F5"))
        #expect(a.littleEndianBytes == [0xF5, 0xF4, 0xF3, 0xF2, 0xF1, 0xF0])
        #expect(a.description == "F0:F1:F2:F3:F4:F5")
        #expect(LEAddress(a, type: .random).randomKind == .static)
        #expect(LEAddress(try #require(BluetoothAddress("40:00:00:00:00:01")), type: .random).randomKind == .resolvablePrivate)
    }

    @Test func uuidForms() throws {
        let short = try #require(BluetoothUUID("180D"))
        let long = try #require(BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB"))
        #expect(short == long)
        #expect(short.littleEndianBytes == [0x0D, 0x18])
        #expect(long.littleEndianBytes.count == 16)
        #expect(long.description == "180D")
        #expect(BluetoothUUID(littleEndian: [0x0D, 0x18]) == short)
        #expect(BluetoothUUID("12345") == nil)
    }
}
