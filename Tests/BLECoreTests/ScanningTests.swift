import Synchronization
import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// Central scanning against a scripted controller on a memory transport. Expected commands
/// and injected events are built from the Core Specification layouts (see `Spec`).
@Suite("Scanning", .timeLimit(.minutes(1)))
struct ScanningTests {
    static let hrm = "F0:5E:B1:00:00:01"
    static let other = "F0:5E:B1:00:00:02"
    static let marker = "F0:5E:B1:00:00:FF"

    static let hrmAdvertisement = Spec.flags + Spec.uuids16(0x180D) + Spec.name("Polar H10 sim")

    @Test("Legacy scan: parameters and enable sent, discovery, scan response merged, breaking out stops the scan")
    func legacyScanLifecycle() async throws {
        let bed = try await ScanBed.make()
        var events: [ScanEvent] = []
        do {
            // The stream lives in this scope only, as in `for try await e in await central.scan()`.
            let stream = await bed.central.scan()
            let started = await bed.controller.scanCommands { $0.count >= 2 }
            #expect(started == [Spec.setScanParameters(active: true, interval: 0x0060, window: 0x0030), Spec.setScanEnable(true)])
            await bed.central.withScanner { await $0.settled() }
            #expect(await bed.central.snapshot.isScanning)

            bed.controller.sendLEMeta(Spec.legacyReports([.init(eventType: 0x00, address: Self.hrm, data: Self.hrmAdvertisement, rssi: -60)]))
            // SCAN_RSP with Manufacturer Specific Data, company 0xFFFF (reserved for testing).
            bed.controller.sendLEMeta(Spec.legacyReports([.init(eventType: 0x04, address: Self.hrm, data: Spec.manufacturer(0xFFFF, [1, 2]), rssi: -58)]))
            for try await event in stream {
                events.append(event)
                if events.count == 2 { break }
            }
        }
        guard case .discovered(let first) = events[0], case .updated(let second) = events[1] else {
            Issue.record("expected discovered then updated, got \(events)")
            return
        }
        #expect("\(first.address)" == "F0:5E:B1:00:00:01 (random static)")
        #expect(first.name == "Polar H10 sim")
        #expect(first.rssi == -60)
        #expect(first.isConnectable)
        #expect(first.advertisingData.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D)])
        #expect(first.advertisingData.manufacturerData.isEmpty)
        #expect(second.name == "Polar H10 sim")
        #expect(second.advertisingData.manufacturerData == [ManufacturerSpecificData(companyID: 0xFFFF, data: [1, 2])])
        #expect(second.rssi == -58)
        #expect(second.isConnectable, "a scan response does not change the advertisement's type")
        #expect(second.smoothedRSSI == -59.5)

        let stopped = await bed.controller.scanCommands { $0.count >= 3 }
        #expect(stopped.last == Spec.setScanEnable(false))
        await bed.central.withScanner { await $0.settled() }
        #expect(await bed.central.snapshot.isScanning == false)
        await bed.central.close()
    }

    @Test("Two subscribers share one scan with the union of their parameters; only the last leaving stops it")
    func sharedScan() async throws {
        let bed = try await ScanBed.make()
        let passive = Collected(await bed.central.scan(options: ScanOptions(mode: .passive, interval: .milliseconds(160), window: .milliseconds(50))))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        // Active, interval 80 ms (0x0080), window 160 ms (0x0100: clamped to the interval).
        let active = Collected(await bed.central.scan(options: ScanOptions(mode: .active, interval: .milliseconds(80), window: .milliseconds(160))))
        let restarted = await bed.controller.scanCommands { $0.count >= 5 }
        #expect(restarted == [
            Spec.setScanParameters(active: false, interval: 0x0100, window: 0x0050), Spec.setScanEnable(true),
            Spec.setScanEnable(false), Spec.setScanParameters(active: true, interval: 0x0080, window: 0x0080), Spec.setScanEnable(true),
        ])

        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.hrm, data: Self.hrmAdvertisement, rssi: -60)]))
        #expect(await passive.first(1).discoveredAddresses == [Self.hrm])
        #expect(await active.first(1).discoveredAddresses == [Self.hrm])

        active.cancel()
        await active.task.value
        await bed.central.withScanner { await $0.settled() }
        let afterSecondLeft = await bed.controller.scanCommands { $0.count >= 8 }
        // Back to what the remaining subscriber asked for; the scan keeps running.
        #expect(Array(afterSecondLeft.dropFirst(5)) == [
            Spec.setScanEnable(false), Spec.setScanParameters(active: false, interval: 0x0100, window: 0x0050), Spec.setScanEnable(true),
        ])
        #expect(await bed.central.snapshot.isScanning)
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.other, data: Spec.flags, rssi: -70)]))
        #expect(await passive.first(2).discoveredAddresses == [Self.hrm, Self.other])

        passive.cancel()
        let stopped = await bed.controller.scanCommands { $0.count >= 9 }
        #expect(stopped.count == 9)
        #expect(stopped.last == Spec.setScanEnable(false))
        await bed.central.close()
    }

    @Test("Subscribing and leaving concurrently settles on the right controller state")
    func concurrentSubscribers() async throws {
        let bed = try await ScanBed.make()
        let central = bed.central
        var subs: [Collected<ScanEvent>] = []
        for i in 0..<8 {
            subs.append(Collected(await central.scan(options: ScanOptions(interval: .microseconds(625 * (0x0040 + i)), window: .milliseconds(20)))))
        }
        await withTaskGroup(of: Void.self) { group in
            for s in subs { group.addTask { s.cancel(); await s.task.value } }
        }
        await central.withScanner { await $0.settled() }
        #expect(await central.snapshot.isScanning == false)
        #expect(await bed.controller.scanCommands { _ in true }.last == Spec.setScanEnable(false))

        // Leave and join at once: the newcomer must end up with a running scan.
        let a = Collected(await central.scan())
        a.cancel()
        let b = Collected(await central.scan())
        await a.task.value
        await central.withScanner { await $0.settled() }
        #expect(await central.snapshot.isScanning)
        #expect(await bed.controller.scanCommands { _ in true }.last == Spec.setScanEnable(true))
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.hrm, data: Self.hrmAdvertisement, rssi: -60)]))
        #expect(await b.first(1).discoveredAddresses == [Self.hrm])
        b.cancel()
        await central.close()
    }

    @Test("Filters: service in a UUID list or in service data, name, RSSI, manufacturer")
    func filters() async throws {
        let bed = try await ScanBed.make()
        let c = bed.central
        let byService = Collected(await c.scan(filter: ScanFilter(services: [BluetoothUUID(uuid16: 0x180D)])))
        let byServiceData = Collected(await c.scan(filter: ScanFilter(services: [BluetoothUUID(uuid16: 0x181A)])))
        let byName = Collected(await c.scan(filter: ScanFilter(nameContains: "polar")))
        let byRSSI = Collected(await c.scan(filter: ScanFilter(minimumRSSI: -50)))
        let byManufacturer = Collected(await c.scan(filter: ScanFilter(manufacturerID: 0x004C)))
        let all = [byService, byServiceData, byName, byRSSI, byManufacturer]
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        await c.withScanner { await $0.settled() }

        let a = Self.hrm                  // 180D in the UUID list, name "Polar H10 sim", -60 dBm
        let b = "F0:5E:B1:00:00:0B"       // service data for 181A (Environmental Sensing), -70 dBm
        let cc = "F0:5E:B1:00:00:0C"      // nothing but flags, -40 dBm
        let d = "F0:5E:B1:00:00:0D"       // manufacturer 0x004C, -70 dBm
        bed.controller.sendLEMeta(Spec.legacyReports([
            .init(address: a, data: Self.hrmAdvertisement, rssi: -60),
            .init(address: b, data: Spec.flags + Spec.serviceData16(0x181A, [0x10, 0x20]), rssi: -70),
            .init(address: cc, data: Spec.flags, rssi: -40),
            .init(address: d, data: Spec.flags + Spec.manufacturer(0x004C, [0x02, 0x15]), rssi: -70),
        ]))
        // A device every filter accepts, sent last: once a subscriber has it, it has seen all.
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.marker, data: Spec.flags + Spec.uuids16(0x180D)
            + Spec.serviceData16(0x181A, [0]) + Spec.name("POLAR marker") + Spec.manufacturer(0x004C, []), rssi: -30)]))
        var seen: [Set<String>] = []
        for s in all {
            let events = await s.log.wait { items, _ in items.discoveredAddresses.contains(Self.marker) }
            seen.append(events.discoveredAddresses)
        }
        #expect(seen[0] == [a, Self.marker])
        #expect(seen[1] == [b, Self.marker])
        #expect(seen[2] == [a, Self.marker])
        #expect(seen[3] == [cc, Self.marker])
        #expect(seen[4] == [d, Self.marker])
        all.forEach { $0.cancel() }
        await c.close()
    }

    @Test("A service in the advertisement and a name in the scan response pass a filter needing both")
    func filterAcrossScanResponse() async throws {
        let bed = try await ScanBed.make()
        let both = Collected(await bed.central.scan(filter: ScanFilter(services: [BluetoothUUID(uuid16: 0x180D)], nameContains: "H10")))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.hrm, data: Spec.flags + Spec.uuids16(0x180D), rssi: -60)]))
        bed.controller.sendLEMeta(Spec.legacyReports([.init(eventType: 0x04, address: Self.hrm, data: Spec.name("Polar H10 sim"), rssi: -60)]))
        let events = await both.first(1)
        #expect(events.count == 1)
        if case .discovered(let p) = events.first {
            #expect(p.name == "Polar H10 sim")
            #expect(p.advertisingData.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D)])
        } else {
            Issue.record("expected a discovery, got \(events)")
        }
        both.cancel()
        await bed.central.close()
    }

    @Test("De-duplication: repeats are dropped unless allowDuplicates; an RSSI change is an update")
    func deduplication() async throws {
        let bed = try await ScanBed.make()
        let deduped = Collected(await bed.central.scan())
        let everything = Collected(await bed.central.scan(options: ScanOptions(allowDuplicates: true)))
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        await bed.central.withScanner { await $0.settled() }
        let report = Spec.legacyReports([.init(address: Self.hrm, data: Self.hrmAdvertisement, rssi: -60)])
        for _ in 0..<3 { bed.controller.sendLEMeta(report) }
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.hrm, data: Self.hrmAdvertisement, rssi: -52)]))

        let d = await deduped.first(2)
        let e = await everything.first(4)
        #expect(d.count == 2)
        if d.count == 2 {
            guard case .discovered = d[0], case .updated(let p) = d[1] else { Issue.record("got \(d)"); return }
            #expect(p.rssi == -52)
        }
        #expect(e.count == 4)
        if e.count == 4 {
            guard case .discovered = e[0], case .updated = e[1], case .updated = e[2], case .updated(let p) = e[3] else { Issue.record("got \(e)"); return }
            #expect(p.rssi == -52)
        }
        deduped.cancel(); everything.cancel()
        await bed.central.close()
    }

    @Test("duplicateInterval: RSSI-only reports at most once per interval, a data change at once")
    func duplicateInterval() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan(options: ScanOptions(allowDuplicates: true, duplicateInterval: .seconds(10))))
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        await bed.central.withScanner { await $0.settled() }
        func report(_ data: [UInt8], rssi: Int8, from address: String = Self.hrm) {
            bed.controller.sendLEMeta(Spec.legacyReports([.init(address: address, data: data, rssi: rssi)]))
        }
        let renamed = Spec.flags + Spec.uuids16(0x180D) + Spec.name("Polar H10 two")
        report(Self.hrmAdvertisement, rssi: -60)          // t = 0: discovered
        report(Self.hrmAdvertisement, rssi: -55)          // RSSI only: held back
        report(Self.hrmAdvertisement, rssi: -55)          // a repeat: held back
        report(renamed, rssi: -54)                        // the name changed: at once
        report(renamed, rssi: -53)                        // RSSI only: held back
        report(Spec.flags, rssi: -70, from: Self.other)   // marks the end of the first burst
        let first = await sub.first(3)
        #expect(first.count == 3)
        if first.count == 3 {
            guard case .discovered(let a) = first[0], case .updated(let b) = first[1], case .discovered(let c) = first[2] else {
                Issue.record("got \(first)"); return
            }
            #expect(a.rssi == -60)
            #expect(b.rssi == -54 && b.advertisingData.localName == "Polar H10 two")
            #expect("\(c.address.address)" == Self.other)
        }
        await bed.clock.advance(by: .seconds(9))
        report(renamed, rssi: -52)                        // t = 9 s: 9 s after the last delivery, held back
        await bed.handled()                               // at t = 9 s, before the clock moves
        await bed.clock.advance(by: .seconds(2))
        report(renamed, rssi: -51)                        // t = 11 s: the interval has passed
        report(renamed, rssi: -50)                        // and starts again
        report(Spec.flags, rssi: -71, from: Self.other)   // the other device's own interval has passed too
        let second = await sub.first(5)
        #expect(second.count == 5)
        if second.count == 5 {
            guard case .updated(let d) = second[3], case .updated(let e) = second[4] else { Issue.record("got \(second)"); return }
            #expect(d.rssi == -51)
            #expect("\(e.address.address)" == Self.other && e.rssi == -71)
        }
        sub.cancel()
        await bed.central.close()
    }

    @Test("Reports read in place: a malformed event is still counted undecodable, the next one delivered; an added observer sees every report")
    func reportsReadInPlace() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan(options: ScanOptions(allowDuplicates: true)))
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        await bed.central.withScanner { await $0.settled() }
        let good = Spec.legacyReports([.init(address: Self.hrm, data: Self.hrmAdvertisement, rssi: -60)])
        // Two reports announced, one present: the whole event is dropped and counted, as a
        // decoded event would be; the report before the missing one is not delivered alone.
        let twoAnnounced = [good[0], 2] + good.dropFirst(2)
        bed.controller.sendLEMeta(twoAnnounced)
        bed.controller.sendLEMeta(good + [0x00])   // one trailing byte
        bed.controller.sendLEMeta(good)
        let first = await sub.first(1)
        #expect(first.count == 1)
        if first.count == 1, case .discovered(let p) = first[0] { #expect(p.rssi == -60) } else { Issue.record("got \(first)") }
        #expect(await bed.central.host.undecodableEvents == 2)

        // An observer besides the central: reports go through the decoded path, to both.
        let seen = Mutex(0)
        await bed.central.host.addEventHandler { event in
            if case .event(.leAdvertisingReport) = event { seen.withLock { $0 += 1 } }
        }
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.hrm, data: Self.hrmAdvertisement, rssi: -58)]))
        let second = await sub.first(2)
        #expect(second.count == 2)
        if second.count == 2, case .updated(let p) = second[1] { #expect(p.rssi == -58) } else { Issue.record("got \(second)") }
        #expect(seen.withLock { $0 } == 1)
        sub.cancel()
        await bed.central.close()
    }

    @Test("Lost events follow the manual clock")
    func lostEvents() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan(options: ScanOptions(lostTimeout: .seconds(5))))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        let reportA = Spec.legacyReports([.init(address: Self.hrm, data: Self.hrmAdvertisement, rssi: -60)])
        bed.controller.sendLEMeta(reportA)
        _ = await sub.first(1)
        await bed.clock.advance(by: .seconds(3))
        bed.controller.sendLEMeta(reportA)            // t = 3 s, a repeat: no event
        await bed.handled()                           // at t = 3 s, before the clock moves
        await bed.clock.advance(by: .seconds(3))       // t = 6 s: A heard 3 s ago, not lost
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.other, data: Spec.flags, rssi: -70)]))
        let second = await sub.first(2)
        #expect(second.count == 2)
        if second.count == 2, case .discovered(let p) = second[1] { #expect("\(p.address.address)" == Self.other) } else { Issue.record("got \(second)") }

        await bed.clock.advance(by: .milliseconds(2500))   // t = 8.5 s: A silent for 5.5 s
        let third = await sub.first(3)
        #expect(third.count == 3)
        if third.count == 3, case .lost(let p) = third[2] { #expect("\(p.address.address)" == Self.hrm) } else { Issue.record("got \(third)") }

        await bed.clock.advance(by: .seconds(3))            // t = 11.5 s: the other one too
        let fourth = await sub.first(4)
        #expect(fourth.count == 4)
        if fourth.count == 4, case .lost(let p) = fourth[3] { #expect("\(p.address.address)" == Self.other) } else { Issue.record("got \(fourth)") }

        // Heard again after being lost: discovered again.
        bed.controller.sendLEMeta(reportA)
        let fifth = await sub.first(5)
        if fifth.count == 5, case .discovered = fifth[4] {} else { Issue.record("got \(fifth)") }
        sub.cancel()
        await bed.central.close()
    }

    @Test("The overall timeout finishes the stream and stops the scan")
    func overallTimeout() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan(options: ScanOptions(timeout: .seconds(10))))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        await bed.clock.advance(by: .seconds(9))
        #expect(await sub.log.ended == false)
        await bed.clock.advance(by: .seconds(1))
        let end = await sub.end()
        #expect(end.ended)
        #expect(end.error == nil)
        let stopped = await bed.controller.scanCommands { $0.count >= 3 }
        #expect(stopped.last == Spec.setScanEnable(false))
        await bed.central.close()
    }

    @Test("Extended scanning commands when the controller supports them; extended reports with TX power and SID")
    func extendedPath() async throws {
        let bed = try await ScanBed.make(extended: true)
        let sub = Collected(await bed.central.scan(options: ScanOptions(mode: .passive, interval: .milliseconds(100), window: .milliseconds(50))))
        let started = await bed.controller.scanCommands { $0.count >= 2 }
        #expect(started == [Spec.setExtendedScanParameters(active: false, interval: 0x00A0, window: 0x0050), Spec.setExtendedScanEnable(true)])
        // Connectable extended advertising (Event_Type 0x0001), SID 3, TX power -4 dBm.
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0001, address: Self.hrm, sid: 3, txPower: -4, rssi: -61, data: Self.hrmAdvertisement)]))
        let events = await sub.first(1)
        if case .discovered(let p) = events.first {
            #expect(p.name == "Polar H10 sim")
            #expect(p.txPower == -4)
            #expect(p.advertisingSID == 3)
            #expect(p.isConnectable)
            #expect(p.eventType.rawValue == 0x0001)
        } else {
            Issue.record("got \(events)")
        }
        sub.cancel()
        let stopped = await bed.controller.scanCommands { $0.count >= 3 }
        #expect(stopped.last == Spec.setExtendedScanEnable(false))
        await bed.central.close()
    }

    @Test("Extended reports after legacy commands are handled, several reports per event")
    func extendedReportsOnLegacyScan() async throws {
        let bed = try await ScanBed.make(extended: false)
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        // Legacy ADV_IND as an extended report (0x0013) and its SCAN_RSP (0x001B), in one event.
        bed.controller.sendLEMeta(Spec.extendedReports([
            .init(eventType: 0x0013, address: Self.hrm, sid: 0xFF, rssi: -50, data: Spec.flags + Spec.uuids16(0x180D)),
            .init(eventType: 0x001B, address: Self.hrm, sid: 0xFF, rssi: -50, data: Spec.name("Polar H10 sim")),
        ]))
        let events = await sub.first(2)
        #expect(events.count == 2)
        if case .updated(let p) = events.last {
            #expect(p.name == "Polar H10 sim")
            #expect(p.advertisingData.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D)])
            #expect(p.advertisingSID == nil)
        } else {
            Issue.record("got \(events)")
        }
        sub.cancel()
        await bed.central.close()
    }

    @Test("Extended fragments are joined per address and SID; a truncated chain is delivered and marked")
    func fragments() async throws {
        let bed = try await ScanBed.make(extended: true)
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        let full = Spec.flags + Spec.uuids16(0x180D) + Spec.name("Polar H10 sim")
        // Split inside the name structure; data status 01 "incomplete, more data to come", then 00.
        let cut = 9
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0001 | 0x20, address: Self.hrm, sid: 2, rssi: -55, data: Array(full[..<cut]))]))
        // Another advertiser in between must not disturb the chain.
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0001, address: Self.other, sid: 2, rssi: -70, data: Spec.flags)]))
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0001, address: Self.hrm, sid: 2, rssi: -55, data: Array(full[cut...]))]))
        let events = await sub.first(2)
        #expect(events.count == 2)
        if events.count == 2, case .discovered(let p) = events[1] {
            #expect("\(p.address.address)" == Self.hrm)
            #expect(p.name == "Polar H10 sim")
            #expect(p.advertisingData.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D)])
            #expect(!p.isDataTruncated)
        } else {
            Issue.record("got \(events)")
        }

        // A third device: first fragment, then status 10 "incomplete, truncated".
        let third = "F0:5E:B1:00:00:03"
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0001 | 0x20, address: third, sid: 1, rssi: -65, data: Spec.flags + Spec.uuids16(0x180F))]))
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0001 | 0x40, address: third, sid: 1, rssi: -65, data: [0x0E, 0x09, 0x42])]))
        let more = await sub.first(3)
        if more.count == 3, case .discovered(let p) = more[2] {
            #expect(p.isDataTruncated)
            #expect(p.advertisingData.serviceUUIDs == [BluetoothUUID(uuid16: 0x180F)])
            #expect(p.advertisingData.structures.last == .malformed(type: 0x09, data: [0x42], reason: "length octet 14 runs past the end: only 2 bytes follow"))
        } else {
            Issue.record("got \(more)")
        }
        sub.cancel()
        await bed.central.close()
    }

    @Test("A malformed AD structure yields the structures before it and a malformed entry, not a failure")
    func malformedStructure() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        // Manufacturer Specific Data claiming 5 octets with only 2 present.
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.hrm, data: Spec.flags + Spec.name("Polar H10 sim") + [0x05, 0xFF, 0x4C], rssi: -60)]))
        let events = await sub.first(1)
        if case .discovered(let p) = events.first {
            #expect(p.name == "Polar H10 sim")
            #expect(p.advertisingData.structures.count == 3)
            if case .malformed(let type, let data, _) = p.advertisingData.structures.last {
                #expect(type == 0xFF)
                #expect(data == [0x4C])
            } else {
                Issue.record("expected a malformed entry last, got \(p.advertisingData.structures)")
            }
        } else {
            Issue.record("got \(events)")
        }
        #expect(await sub.log.ended == false)
        sub.cancel()
        await bed.central.close()
    }

    @Test("Directed and anonymous reports are kept and marked")
    func directedAndAnonymous() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        bed.controller.sendLEMeta(Spec.directedReport(addressType: 0x01, address: Self.hrm, directAddressType: 0x00,
                                                      directAddress: "00:00:5E:00:53:01", rssi: -66))
        // Address_Type 0xFF: anonymous extended advertising, non-connectable (Event_Type 0).
        bed.controller.sendLEMeta(Spec.extendedReports([.init(eventType: 0x0000, addressType: 0xFF, address: "00:00:00:00:00:00", sid: 5, rssi: -77, data: Spec.flags)]))
        let events = await sub.first(2)
        #expect(events.count == 2)
        if events.count == 2, case .discovered(let directed) = events[0], case .discovered(let anonymous) = events[1] {
            #expect(directed.directAddress == LEAddress(BluetoothAddress(rawValue: 0x00005E005301), type: .public))
            #expect(directed.isConnectable)
            #expect(directed.eventType.contains(.directed))
            #expect(anonymous.isAnonymous)
            #expect(!anonymous.isConnectable)
            #expect(anonymous.advertisingSID == 5)
        } else {
            Issue.record("got \(events)")
        }
        sub.cancel()
        await bed.central.close()
    }

    @Test("The controller refusing to start the scan fails the stream with its HCIError")
    func rejectedStart() async throws {
        // Command Disallowed (0x0C) for every LE Set Scan Enable that enables.
        let bed = try await ScanBed.make(reject: { c, _ in c.opcode.rawValue == 0x200C && c.parameters.first == 1 ? 0x0C : nil })
        let sub = Collected(await bed.central.scan())
        let end = await sub.end()
        #expect(end.ended)
        #expect(end.error as? HCIError == .commandFailed(opcode: HCIOpcode(rawValue: 0x200C), status: .commandDisallowed))
        await bed.central.withScanner { await $0.settled() }
        #expect(await bed.central.snapshot.isScanning == false)
        await bed.central.close()
    }

    @Test("A lost transport ends the streams with an error that says so")
    func transportLost() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        bed.controller.close()
        let end = await sub.end()
        #expect(end.ended)
        #expect("\(end.error.map { "\($0)" } ?? "")".contains("transport is lost"))
        #expect(await bed.central.snapshot.isScanning == false)
    }

    @Test("stopAll finishes every stream with the error given and stops the scan")
    func stopAll() async throws {
        struct Stop: Error, Equatable {}
        let bed = try await ScanBed.make()
        let a = Collected(await bed.central.scan()), b = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        await bed.central.withScanner { await $0.stopAll(error: Stop()) }
        #expect(await a.end().error as? Stop == Stop())
        #expect(await b.end().error as? Stop == Stop())
        #expect(await bed.controller.scanCommands { _ in true }.last == Spec.setScanEnable(false))
        await bed.central.close()
    }

    @Test("pause() stops the controller scan and resume() restarts it for the same subscribers")
    func pauseResume() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        await bed.central.withScanner { await $0.settled() }
        await bed.central.withScanner { await $0.pause() }
        #expect(await bed.central.snapshot.isScanning == false)
        #expect(await bed.controller.scanCommands { _ in true }.last == Spec.setScanEnable(false))
        await bed.central.withScanner { await $0.resume() }
        #expect(await bed.central.snapshot.isScanning)
        #expect(Array(await bed.controller.scanCommands { _ in true }.suffix(2)) == [Spec.setScanParameters(active: true, interval: 0x0060, window: 0x0030), Spec.setScanEnable(true)])
        #expect(await sub.log.ended == false)
        sub.cancel()
        await bed.central.close()
    }

    @Test("Snapshots list devices by smoothed RSSI, at most once per interval")
    func snapshots() async throws {
        let bed = try await ScanBed.make()
        let lists = Collected(await bed.central.discoveredPeripherals(interval: .milliseconds(250)))
        let witness = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(true) }
        await bed.central.withScanner { await $0.settled() }
        #expect(await lists.first(1) == [[]])
        bed.controller.sendLEMeta(Spec.legacyReports([
            .init(address: Self.hrm, data: Self.hrmAdvertisement, rssi: -80),
            .init(address: Self.other, data: Spec.flags, rssi: -40),
        ]))
        // Both reports handled, then time moves: one list with both, strongest first.
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.marker, data: Spec.flags, rssi: -60)]))
        // A second subscriber sees the marker after the same handling pass as the list's.
        _ = await witness.log.wait { items, _ in items.discoveredAddresses.contains(Self.marker) }
        #expect(await lists.log.items.count == 1, "nothing before the interval passes")
        await bed.clock.advance(by: .milliseconds(250))
        let got = await lists.first(2)
        #expect(got.count == 2)
        #expect(got.last?.map { "\($0.address.address)" } == [Self.other, Self.marker, Self.hrm])
        lists.cancel()
        witness.cancel()
        let stopped = await bed.controller.scanCommands { $0.last == Spec.setScanEnable(false) }
        #expect(stopped.last == Spec.setScanEnable(false))
        await bed.central.close()
    }

    @Test("The device table is bounded: the least recently heard device is evicted and reported lost")
    func boundedTable() async throws {
        let bed = try await ScanBed.make()
        await bed.central.withScanner { $0.setDeviceLimit(2) }
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.hrm, data: Spec.flags, rssi: -60)]))
        _ = await sub.first(1)
        await bed.clock.advance(by: .seconds(1))
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.other, data: Spec.flags, rssi: -60)]))
        _ = await sub.first(2)
        await bed.clock.advance(by: .seconds(1))
        bed.controller.sendLEMeta(Spec.legacyReports([.init(address: Self.marker, data: Spec.flags, rssi: -60)]))
        let events = await sub.first(4)
        #expect(events.count == 4)
        if events.count == 4, case .lost(let p) = events[2], case .discovered(let q) = events[3] {
            #expect("\(p.address.address)" == Self.hrm)
            #expect("\(q.address.address)" == Self.marker)
        } else {
            Issue.record("got \(events)")
        }
        #expect(await bed.central.withScanner { $0.knownCount() } == 2)
        sub.cancel()
        await bed.central.close()
    }

    @Test("Connecting on a controller that cannot scan and initiate at once pauses the scan and resumes it after")
    func connectPausesScan() async throws {
        // LE Create Connection (0x200D) gets Command Disallowed (0x0C) while LE Set Scan Enable
        // last enabled the scan.
        let bed = try await ScanBed.make(reject: { c, earlier in
            guard c.opcode.rawValue == 0x200D else { return nil }
            let lastEnable = earlier.last { $0.opcode.rawValue == 0x200C }
            return lastEnable?.parameters.first == 1 ? 0x0C : nil
        })
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        await bed.central.withScanner { await $0.settled() }
        let peer = LEAddress(BluetoothAddress(rawValue: 0xF05EB1000001), type: .random)
        let central = bed.central
        async let link = central.connect(peer, timeout: .seconds(30))
        _ = await bed.controller.commands { $0.filter { $0.opcode.rawValue == 0x200D }.count >= 2 }
        // The completion may only come once the central waits for it (a real controller
        // takes a connection event at least); check a bounded number of times.
        for _ in 0..<1000 where await central.pendingConnect == nil {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(await central.pendingConnect != nil)
        // HCI_LE_Connection_Complete (7.7.65.1): Subevent 0x01, Status 0, handle 0x0040, role
        // Central, peer random F0:5E:B1:00:00:01, interval 0x0018, latency 0, timeout 0x0048,
        // clock accuracy 0.
        bed.controller.sendLEMeta([0x01, 0x00, 0x40, 0x00, 0x00, 0x01] + Spec.address(Self.hrm) + [0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00])
        _ = try await link
        let all = await bed.controller.commands { cmds in
            let relevant = cmds.filter { [0x200B, 0x200C, 0x200D].contains($0.opcode.rawValue) }
            return relevant.count >= 7
        }
        let relevant = all.filter { [0x200B, 0x200C, 0x200D].contains($0.opcode.rawValue) }
        #expect(relevant.map(\.opcode.rawValue) == [0x200B, 0x200C, 0x200D, 0x200C, 0x200D, 0x200B, 0x200C])
        if relevant.count == 7 {
            #expect(relevant[3] == Spec.setScanEnable(false))
            #expect(relevant[6] == Spec.setScanEnable(true))
        }
        #expect(await sub.log.ended == false)
        sub.cancel()
        await bed.central.close()
    }
}
