import Foundation
import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// Loads a file under Fixtures/.
func fixtureBytes(_ relative: String) throws -> [UInt8] {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return Array(try Data(contentsOf: root.appendingPathComponent("Fixtures").appendingPathComponent(relative)))
}

@Suite struct BTSnoopTests {
    // Record counts as tshark -r reports them (Fixtures/captures/README.md).
    @Test(arguments: [
        ("real/phlash__blefun.btsnoop", 29_317),
        ("real/crossnite__NovaX-Escooter.btsnoop", 2_939),
        ("real/csacca__horizon-74-at-ble.btsnoop", 2_572),
        ("real/cnrd__yeelock.btsnoop", 690),
    ])
    func realCapturesDecodeAndRoundTrip(file: String, records: Int) throws {
        let bytes = try fixtureBytes("captures/" + file)
        let capture = try BTSnoopReader(bytes: bytes)
        #expect(capture.datalink == .h4)
        #expect(capture.trailingError == nil)
        #expect(capture.undecodable.isEmpty)
        #expect(capture.records.count == records)
        // Re-encoding every record gives back the file byte for byte.
        var out = BTSnoopEncoder.header
        for r in capture.records { BTSnoopEncoder.append(r, to: &out) }
        #expect(out.count == bytes.count)
        #expect(out == bytes)
    }

    @Test func damagedHeaderAndTruncatedRecord() throws {
        #expect(throws: DecodeError.self) { try BTSnoopReader(bytes: Array("btsnoXX\0".utf8) + [0, 0, 0, 1, 0, 0, 3, 0xEA]) }
        var bytes = BTSnoopEncoder.header
        BTSnoopEncoder.append(BTSnoopRecord(direction: .sent, timestamp: 1, packet: .command(HCICommandPacket(opcode: HCIOpcode(rawValue: 0x0C03)))), to: &bytes)
        let whole = try BTSnoopReader(bytes: bytes)
        #expect(whole.records.count == 1)
        let cut = try BTSnoopReader(bytes: Array(bytes.dropLast(2)))
        #expect(cut.records.isEmpty)
        #expect(cut.trailingError != nil)
    }
}
