import Testing
import Synchronization
import BLECore
import BLETestSupport
import BLEWire

/// Scanning through the virtual controller, driven with raw HCI commands on the host (the
/// central's scanner sits above this). Event types from Vol 4, Part E, 7.7.65.2 and 7.7.65.13.
@Suite(.timeLimit(.minutes(1)))
struct VirtualControllerScanTests {
    final class Reports: Sendable {
        let events = Mutex<[HCIEvent]>([])
        var all: [HCIEvent] { events.withLock { $0 } }
    }

    static func collect(_ central: Central) async -> Reports {
        let reports = Reports()
        await central.host.addEventHandler { event in
            if case .event(let e) = event { reports.events.withLock { $0.append(e) } }
        }
        return reports
    }

    @Test func activeLegacyScanReportsAdvIndAndScanResponseEachInterval() async throws {
        let (vc, central) = try await VC.stack()
        vc.addPeripheral(SimulatedPeripheral(address: VC.peer, advertisingData: [0x02, 0x01, 0x06],
                                             scanResponseData: [0x04, 0x09, 0x48, 0x52, 0x4D], advertisingInterval: .milliseconds(100), rssi: -42))
        let reports = await Self.collect(central)
        try await central.host.send(HCICommand.leSetScanParameters(.init(scanType: 1)))
        try await central.host.send(HCICommand.leSetScanEnable(.init(enable: true)))
        await vc.settle()
        #expect(reports.all.isEmpty) // nothing before virtual time moves
        await vc.advance(by: .milliseconds(250))
        let adv = HCIEvent.leAdvertisingReport([.init(eventType: 0x00, addressType: 0x01, address: VC.peer.address, data: [0x02, 0x01, 0x06], rssi: -42)])
        let rsp = HCIEvent.leAdvertisingReport([.init(eventType: 0x04, addressType: 0x01, address: VC.peer.address, data: [0x04, 0x09, 0x48, 0x52, 0x4D], rssi: -42)])
        #expect(reports.all == [adv, rsp, adv, rsp]) // at 100 ms and 200 ms
        try await central.host.send(HCICommand.leSetScanEnable(.init(enable: false)))
        await vc.advance(by: .seconds(1))
        #expect(reports.all.count == 4)
    }

    @Test func duplicateFilterReportsOnce() async throws {
        let (vc, central) = try await VC.stack()
        let reports = await Self.collect(central)
        try await central.host.send(HCICommand.leSetScanParameters(.init(scanType: 0)))
        try await central.host.send(HCICommand.leSetScanEnable(.init(enable: true, filterDuplicates: true)))
        await vc.advance(by: .seconds(1))
        #expect(reports.all.count == 1) // passive: ADV_IND only, once
    }

    @Test func extendedScanSplitsLongDataIntoFragments() async throws {
        let (vc, central) = try await VC.stack { o in
            o.leFeatures = [.leExtendedAdvertising]
            o.extendedReportFragmentSize = 100
        }
        let long = [UInt8](repeating: 0xAB, count: 250)
        vc.addPeripheral(SimulatedPeripheral(address: VC.peer, advertisingData: long, isConnectable: false, usesExtendedAdvertising: true))
        let reports = await Self.collect(central)
        try await central.host.send(HCICommand.leSetExtendedScanParameters(.init(le1M: .init(scanType: 0))))
        try await central.host.send(HCICommand.leSetExtendedScanEnable(.init(enable: true)))
        await vc.advance(by: .milliseconds(100))
        let parts: [HCIEvent.LEExtendedAdvertisingReport] = reports.all.flatMap { e -> [HCIEvent.LEExtendedAdvertisingReport] in
            if case .leExtendedAdvertisingReport(let r) = e { return r }
            return []
        }
        #expect(parts.map(\.data.count) == [100, 100, 50])
        #expect(parts.map(\.eventType.dataStatus) == [.incompleteMoreToCome, .incompleteMoreToCome, .complete])
        #expect(parts.allSatisfy { !$0.eventType.contains(.legacy) && !$0.eventType.contains(.connectable) })
        #expect(parts.flatMap(\.data) == long)
    }
}
