import Foundation
import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// Inputs that once broke a fuzz target (Fixtures/fuzz/<target>/crash-*.bin, written by
/// `scripts/fuzz`; see Fixtures/fuzz/README.md). Each is replayed through the decoder the
/// target drives, in the target's input layout: the decoder must end in a value or a typed
/// `DecodeError`, and the property the target checks must hold. A trap fails the whole run.
@Suite struct FuzzRegressionTests {
    /// Every fixture file, by target directory.
    static func fixtures() throws -> [(target: String, name: String, bytes: [UInt8])] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/fuzz")
        var out: [(String, String, [UInt8])] = []
        let fm = FileManager.default
        for target in try fm.contentsOfDirectory(atPath: root.path).sorted() {
            let dir = root.appendingPathComponent(target)
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: dir.path, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            for name in try fm.contentsOfDirectory(atPath: dir.path).sorted() where name.hasPrefix("crash-") {
                out.append((target, name, Array(try Data(contentsOf: dir.appendingPathComponent(name)))))
            }
        }
        return out
    }

    @Test func everyFixtureReplaysWithoutTrapping() throws {
        let all = try Self.fixtures()
        #expect(!all.isEmpty, "no fixtures found under Fixtures/fuzz")
        for fixture in all {
            switch fixture.target {
            case "HCICommand": replayHCICommand(fixture.bytes, fixture.name)
            case "HCIEvent": replayHCIEvent(fixture.bytes, fixture.name)
            case "L2CAPSignaling":
                if let c = try? L2CAPSignalingCommand(bytes: fixture.bytes) { #expect(c.bytes == fixture.bytes, "\(fixture.name)") }
            case "AdvertisingData":
                _ = AdvertisingData(bytes: Array(fixture.bytes.dropFirst()))
            case "BTSnoop":
                _ = try? BTSnoopReader(bytes: fixture.bytes)
            default:
                Issue.record("\(fixture.target)/\(fixture.name): no replay for this target in FuzzRegressionTests")
            }
        }
    }

    /// HCICommand layout: opcode (2 octets, little-endian), then the parameters.
    func replayHCICommand(_ bytes: [UInt8], _ name: String) {
        let opcode = UInt16(bytes.first ?? 0) | UInt16(bytes.dropFirst().first ?? 0) << 8
        let packet = HCICommandPacket(opcode: HCIOpcode(rawValue: opcode), parameters: Array(bytes.dropFirst(2).prefix(255)))
        do throws(DecodeError) {
            let decoded = try HCICommandDecoded(packet)
            #expect(decoded.packet.opcode == packet.opcode, "\(name)")
            #expect(decoded.packet.parameters.count == packet.parameters.count, "\(name)")
        } catch {
            #expect(!error.description.isEmpty, "\(name)")
        }
    }

    /// HCIEvent layout: event code, then the parameters.
    func replayHCIEvent(_ bytes: [UInt8], _ name: String) {
        let packet = HCIEventPacket(code: bytes.first ?? 0, parameters: Array(bytes.dropFirst().prefix(255)))
        if let event = try? HCIEvent(packet) { #expect(event.packet == packet, "\(name)") }
    }

    /// Found by the HCICommand target: HCI_LE_Set_Scan_Response_Data (0x2009) with
    /// Scan_Response_Data_Length 2 and non-zero octets past it. The decoder keeps the two
    /// significant octets; the re-encoded command carries them and writes the 29 unused octets
    /// as zeros (Vol 4, Part E, 7.8.8: only Data_Length octets are significant).
    @Test func scanResponseDataPaddingIsNotSignificant() throws {
        let bytes = try fixtureBytes("fuzz/HCICommand/crash-scan-response-padding.bin")
        #expect(bytes.count == 34)
        let packet = HCICommandPacket(opcode: HCIOpcode(rawValue: UInt16(bytes[0]) | UInt16(bytes[1]) << 8),
                                      parameters: Array(bytes[2...]))
        #expect(packet.opcode.rawValue == 0x2009)
        let decoded = try HCICommandDecoded(packet)
        guard case .leSetScanResponseData(let c) = decoded else {
            Issue.record("decoded as \(decoded), expected LE Set Scan Response Data")
            return
        }
        #expect(c.data == [0x00, 0x00])
        #expect(decoded.packet.parameters == [0x02, 0x00, 0x00] + [UInt8](repeating: 0, count: 29))
        #expect(packet.parameters[3...].contains { $0 != 0 }, "the fixture's unused octets are non-zero")
    }
}
