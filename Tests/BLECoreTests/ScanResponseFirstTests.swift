import Testing
@testable import BLECore
import BLEWire

/// A scan response whose advertising report the scan did not take (it came before the scan's
/// first subscriber joined, as between two scans under load) is not a sighting: the device is
/// discovered from its next advertising report, which says whether it is connectable. A
/// controller reports the advertisement before the scan response that answers it (Vol 6,
/// Part B, 4.4.3.2: SCAN_RSP answers SCAN_REQ, which answers a scannable advertisement).
@Suite("A scan response alone", .timeLimit(.minutes(1)))
struct ScanResponseFirstTests {
    static let device = "F0:5E:B1:00:00:07"

    @Test("The device is discovered from its advertising report, connectable, with the scan response's data merged")
    func discoveredFromTheAdvertisement() async throws {
        let bed = try await ScanBed.make(extended: true)
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        // Extended report Event_Type bit 3 (scan response) alone, then bit 0 (connectable)
        // with the advertising data (Vol 4, Part E, 7.7.65.13).
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0008, address: Self.device, sid: 0, rssi: -50, data: Spec.name("SC private sim"))]))
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0001, address: Self.device, sid: 0, rssi: -50, data: Spec.flags + Spec.uuids16(0x180F))]))
        let events = await sub.first(1)
        guard case .discovered(let p)? = events.first else {
            Issue.record("got \(events)")
            return
        }
        #expect(p.isConnectable)
        #expect(p.eventType.rawValue == 0x0001)
        #expect(p.advertisingData.serviceUUIDs == [BluetoothUUID(uuid16: 0x180F)])
        // The next scan response of a known device is merged as before.
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0008, address: Self.device, sid: 0, rssi: -50, data: Spec.name("SC private sim"))]))
        let more = await sub.first(2)
        if case .updated(let q)? = more.last {
            #expect(q.name == "SC private sim")
            #expect(q.isConnectable)
        } else {
            Issue.record("got \(more)")
        }
        sub.cancel()
        await bed.central.close()
    }
}
