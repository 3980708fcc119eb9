import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// The hand-made captures (scripts/make-handmade-captures, byte layouts from Vol 4, Part E,
/// 7.7.65) hold what the virtual peers never send.
@Suite struct HandmadeCaptureTests {
    func events(_ name: String) throws -> [HCIEvent] {
        let capture = try BTSnoopReader(bytes: try fixtureBytes("captures/handmade/" + name))
        #expect(capture.undecodable.isEmpty && capture.trailingError == nil)
        return try capture.records.map { record in
            guard case .event(let packet) = record.packet else { throw DecodeError.malformed(what: name, detail: "not an event") }
            #expect(record.direction == .received)
            return try HCIEvent(packet)
        }
    }

    @Test func legacyEventWithThreeReports() throws {
        let all = try events("legacy-multi-report.btsnoop")
        guard case .leAdvertisingReport(let reports) = try #require(all.first) else { Issue.record("\(all)"); return }
        #expect(reports.map(\.eventType) == [0x00, 0x04, 0x03])
        #expect(reports.map(\.address.description) == ["C1:00:00:00:00:01", "C1:00:00:00:00:01", "00:1B:DC:00:00:02"])
        #expect(reports.map(\.rssi) == [-40, -41, -70])
        // The ADV_IND and its SCAN_RSP merge into one device's data: service 180D, name "HRM1".
        let merged = AdvertisingData(bytes: reports[0].data).merging(AdvertisingData(bytes: reports[1].data))
        #expect(merged.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D)])
        #expect(merged.localName == "HRM1")
        #expect(AdvertisingData(bytes: reports[2].data).manufacturerData.first?.companyID == 0x004C)
    }

    @Test func extendedReportInThreeChainedFragments() throws {
        let all = try events("extended-chained-report.btsnoop")
        let fragments = all.compactMap { e -> HCIEvent.LEExtendedAdvertisingReport? in
            if case .leExtendedAdvertisingReport(let r) = e { return r.first }
            return nil
        }
        #expect(fragments.map(\.eventType.dataStatus) == [.incompleteMoreToCome, .incompleteMoreToCome, .complete])
        #expect(fragments.allSatisfy { $0.advertisingSID == 5 && $0.address.description == "C2:00:00:00:00:03" })
        let data = AdvertisingData(bytes: fragments.flatMap(\.data))
        #expect(data.localName == "chained-extended-advertisement")
        #expect(data.serviceUUIDs == [BluetoothUUID(uuid16: 0x180F)])
    }

    @Test func enhancedConnectionCompleteV2() throws {
        let all = try events("enhanced-connection-complete-v2.btsnoop")
        guard case .leEnhancedConnectionComplete(let e) = try #require(all.first) else { Issue.record("\(all)"); return }
        #expect(e.isV2 && e.status == .success && e.handle == 0x0040 && e.role == 0)
        #expect(e.peer == LEAddress("C3:00:00:00:00:04", type: .random))
        #expect(e.connectionInterval == 0x0018 && e.supervisionTimeout == 0x01F4)
        #expect(e.advertisingHandle == 0xFF && e.syncHandle == 0xFFFF)
    }
}
