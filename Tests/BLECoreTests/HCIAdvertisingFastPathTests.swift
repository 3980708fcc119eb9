import Testing
@_spi(Internals) @testable import BLECore
@testable import BLETransport
@_spi(Internals) @testable import BLEWire

/// The in-place advertising report reader: agrees with the full decoder, rejects malformed
/// input, and keeps up with the scan rate the host needs.
@Suite struct HCIAdvertisingFastPathTests {
    /// LE Meta parameters of the two-report fixtures in HCIEventTests (legacy 0x02, extended 0x0D).
    static var metaFixtures: [[UInt8]] {
        HCIEventTests.fixtures.filter { $0.0 == 0x3E && ($0.1.first == 0x02 || $0.1.first == 0x0D) }.map(\.1)
    }

    @Test func agreesWithTheFullDecoder() throws {
        #expect(Self.metaFixtures.count == 2)
        for params in Self.metaFixtures {
            var views: [(BluetoothAddress, UInt8, Int8, [UInt8], UInt16, Bool)] = []
            let n = try HCIEvent.forEachAdvertisingReport(in: params) { v in
                views.append((v.address, v.addressType, v.rssi, Array(v.data), v.eventType, v.isConnectable))
                #expect(Array(params[v.dataRange]) == Array(v.data))
            }
            switch try HCIEvent(HCIEventPacket(code: 0x3E, parameters: params)) {
            case .leAdvertisingReport(let reports):
                #expect(n == reports.count)
                for (v, r) in zip(views, reports) {
                    #expect(v.0 == r.address && v.1 == r.addressType && v.2 == r.rssi && v.3 == r.data && v.4 == UInt16(r.eventType))
                }
                #expect(views.map(\.5) == [true, true])   // ADV_IND; SCAN_RSP maps to 0x1B (connectable)
            case .leExtendedAdvertisingReport(let reports):
                #expect(n == reports.count)
                for (v, r) in zip(views, reports) {
                    #expect(v.0 == r.address && v.1 == r.addressType && v.2 == r.rssi && v.3 == r.data && v.4 == r.eventType.rawValue)
                }
            default:
                Issue.record("fixture is not an advertising report")
            }
            // Straight from H4 bytes.
            let h4: [UInt8] = [0x04, 0x3E, UInt8(params.count)] + params
            #expect(try Self.h4Reports(h4) == n)
        }
    }

    @Test func extendedFieldsAreExposed() throws {
        let params = Self.metaFixtures[1]
        var second: (UInt8, UInt8, UInt8, Int8, UInt16)?
        try HCIEvent.forEachAdvertisingReport(in: params) { v in
            if v.address == HCIEventTests.addrB {
                second = (v.primaryPHY, v.secondaryPHY, v.advertisingSID, v.txPower, v.periodicAdvertisingInterval)
            }
        }
        #expect(second.map { [$0.0, $0.1, $0.2] } == [3, 2, 5])
        #expect(second?.3 == -10 && second?.4 == 0x0010)
    }

    @Test func malformedInputIsATypedError() throws {
        for params in Self.metaFixtures {
            for n in 1..<params.count {
                let cut = Array(params.prefix(n))
                #expect(throws: DecodeError.self, "cut to \(n)") { try HCIEvent.forEachAdvertisingReport(in: cut) { _ in } }
            }
            #expect(throws: DecodeError.self) { try HCIEvent.forEachAdvertisingReport(in: params + [0]) { _ in } }
        }
        // Other subevents and events have no reports.
        #expect(try HCIEvent.forEachAdvertisingReport(in: [0x03, 0x00, 0x40, 0x00]) { _ in } == 0)
        #expect(try Self.h4Reports([0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]) == 0)
        // An H4 length field that disagrees with the bytes.
        let params = Self.metaFixtures[0]
        #expect(throws: DecodeError.self) { try Self.h4Reports([0x04, 0x3E, UInt8(params.count + 1)] + params) }
    }

    /// Number of reports read from one H4 packet.
    static func h4Reports(_ h4: [UInt8]) throws -> Int {
        var count = 0
        var failure: DecodeError?
        h4.withUnsafeBytes { raw in
            do throws(DecodeError) {
                _ = try HCIEvent.forEachAdvertisingReport(h4: raw) { _ in count += 1 }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return count
    }

    /// Walks AD structures (Vol 3, Part C, 11) for a 16-bit UUID in AD types 0x02/0x03.
    @inline(__always)
    static func advertises(uuid16: UInt16, _ data: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < data.count {
            let length = Int(data[i])
            guard length > 0, i + 1 + length <= data.count else { return false }
            let type = data[i + 1]
            if type == 0x02 || type == 0x03 {
                var j = i + 2
                while j + 1 < i + 1 + length {
                    if UInt16(data[j]) | UInt16(data[j + 1]) << 8 == uuid16 { return true }
                    j += 2
                }
            }
            i += 1 + length
        }
        return false
    }
}
