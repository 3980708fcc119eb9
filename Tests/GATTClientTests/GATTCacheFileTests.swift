import Testing
@testable import GATTClient
import BLETestSupport
import BLEWire

/// The persistent cache's file layout (docs/gatt-cache.md) against bytes written out by hand
/// from it, the CRC-32 against the algorithm's published check value, and the decoder against
/// damaged, truncated, foreign and inconsistent files.
@Suite struct GATTCacheFileTests {
    static let peer = LEAddress("F0:F1:F2:F3:F4:F5", type: .random)!
    static let nus = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let nusRX = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
    /// The Database Hash of Core Spec 5.4 Vol 3, Part G, Appendix B (F1CA2D48ECF58BAC8A8830BBB9FBA990),
    /// least significant octet first as Read By Type returns it.
    static let hash = Array([UInt8](hex: "F1CA2D48ECF58BAC8A8830BBB9FBA990")!.reversed())

    static var snapshot: GATTDatabaseSnapshot {
        var s = GATTDatabaseSnapshot()
        s.databaseHash = hash
        let gatt = GATTService(uuid: BluetoothUUID(uuid16: 0x1801), handle: 0x0001, endHandle: 0x0005)
        let uart = GATTService(uuid: nus, handle: 0x0006, endHandle: 0x000A)
        s.services = [gatt, uart]
        s.characteristics[0x0001] = [GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0x2A05), handle: 0x0002, valueHandle: 0x0003,
                                                        properties: .indicate, endHandle: 0x0004, serviceUUID: gatt.uuid)]
        s.characteristics[0x0006] = [GATTCharacteristic(uuid: nusRX, handle: 0x0008, valueHandle: 0x0009,
                                                        properties: [.read, .notify], endHandle: 0x000A, serviceUUID: nus)]
        s.descriptors[0x0003] = [GATTDescriptor(uuid: BluetoothUUID(uuid16: 0x2902), handle: 0x0004)]
        s.descriptors[0x0009] = [GATTDescriptor(uuid: BluetoothUUID(uuid16: 0x2902), handle: 0x000A)]
        s.includedServices[0x0006] = [GATTIncludedService(declarationHandle: 0x0007,
                                                          service: GATTService(uuid: BluetoothUUID(uuid16: 0x180F), handle: 0x000B, endHandle: 0x000D, isPrimary: false))]
        return s
    }

    /// `snapshot`'s file, field by field from the layout; the CRC-32 by Python's zlib.crc32.
    static let bytes = [UInt8](hex: """
        424C454741545443 01 F5F4F3F2F1F0 01 90A9FBB9BB30888AAC8BF5EC482DCAF1
        0200 02 0118 0100 0500 01 10 9ECADC240EE5A9E093F3A3B50100406E 0600 0A00 01
        0200 0100 0100 02 052A 0200 0300 20 0400
             0600 0100 10 9ECADC240EE5A9E093F3A3B50200406E 0800 0900 12 0A00
        0200 0300 0100 02 0229 0400
             0900 0100 02 0229 0A00
        0100 0600 0100 0700 02 0F18 0B00 0D00
        56823E00
        """.filter { !$0.isWhitespace })!

    @Test func crc32MatchesThePublishedCheckValue() {
        // CRC-32/ISO-HDLC check value over "123456789" (Greg Cook's CRC catalogue).
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test func encodesTheDocumentedLayout() {
        #expect(GATTCacheFile.encode(Self.snapshot, peer: Self.peer) == Self.bytes)
    }

    @Test func decodesTheDocumentedLayout() throws {
        #expect(try GATTCacheFile.decode(Self.bytes, peer: Self.peer) == Self.snapshot)
    }

    @Test func everyTruncationIsAnError() {
        for n in 0..<Self.bytes.count {
            #expect(throws: DecodeError.self) { try GATTCacheFile.decode(Array(Self.bytes.prefix(n)), peer: Self.peer) }
        }
    }

    @Test func everyFlippedBitIsAnError() {
        for i in 0..<Self.bytes.count {
            var damaged = Self.bytes
            damaged[i] ^= 0x10
            #expect(throws: DecodeError.self) { try GATTCacheFile.decode(damaged, peer: Self.peer) }
        }
    }

    @Test func anotherVersionIsNamed() {
        var other = Self.bytes
        other[8] = 2
        #expect(throws: DecodeError.invalidValue(what: "GATT cache file", field: "version (this build reads 1)", value: 2)) {
            try GATTCacheFile.decode(other, peer: Self.peer)
        }
    }

    @Test func anotherPeersFileIsRefused() {
        let other = LEAddress("F0:F1:F2:F3:F4:F6", type: .random)!
        #expect(throws: DecodeError.malformed(what: "GATT cache file", detail: "written for F0:F1:F2:F3:F4:F5 (random), not F0:F1:F2:F3:F4:F6 (random)")) {
            try GATTCacheFile.decode(Self.bytes, peer: other)
        }
    }

    /// A file with a correct CRC whose characteristic lies outside its service (a file a
    /// hostile user planted, or a bug) is refused, not used.
    @Test func aCharacteristicOutsideItsServiceIsRefused() {
        var planted = Array(Self.bytes.dropLast(4))
        // The GATT service's characteristic: end handle 0x0004 -> 0x0006 (past the service's 0x0005).
        let end = 9 + 6 + 1 + 16 + 2 + 8 + 22 + 2 + 2 + 2 + 3 + 2 + 2 + 1
        #expect(Array(planted[end..<end + 2]) == [0x04, 0x00])
        planted[end] = 0x06
        planted.appendLE(CRC32.checksum(planted))
        #expect(throws: DecodeError.malformed(what: "GATT cache file", detail: "characteristic at 0x0002 does not fit service 0x0001-0x0005")) {
            try GATTCacheFile.decode(planted, peer: Self.peer)
        }
    }

    @Test func overlappingServicesAreRefused() {
        var planted = Array(Self.bytes.dropLast(4))
        // The first service's end handle 0x0005 -> 0x0006, over the second's start.
        let end = 9 + 6 + 1 + 16 + 2 + 3 + 2
        #expect(Array(planted[end..<end + 2]) == [0x05, 0x00])
        planted[end] = 0x06
        planted.appendLE(CRC32.checksum(planted))
        #expect(throws: DecodeError.malformed(what: "GATT cache file", detail: "service at 0x0006 overlaps or precedes the one at 0x0001")) {
            try GATTCacheFile.decode(planted, peer: Self.peer)
        }
    }

    @Test func aFileLargerThanTheLimitIsRefusedBeforeDecoding() {
        let huge = [UInt8](repeating: 0, count: GATTCacheFile.maximumSize + 1)
        #expect(throws: DecodeError.malformed(what: "GATT cache file", detail: "524289 bytes, more than 524288")) {
            try GATTCacheFile.decode(huge, peer: Self.peer)
        }
    }
}
