#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// What bounds the scanner's memory in a dense scene with rotating addresses: the device
/// table follows the lost timeouts, one device's merged data cannot grow without end, and a
/// slow subscriber's buffer holds at most what its policy says. Reports are built from the
/// Core Specification layouts (`Spec`, Vol 4, Part E, 7.7.65.2).
@Suite("Scan memory", .timeLimit(.minutes(1)))
struct ScanMemoryTests {
    static let a = "F0:5E:B1:00:00:01"
    static let b = "F0:5E:B1:00:00:02"
    /// A resolvable private address (the two top bits 0b01, Vol 6, Part B, 1.3.2.2).
    static let rotating = "4A:5E:B1:00:00:03"

    static func report(_ address: String, _ data: [UInt8] = Spec.flags, rssi: Int8 = -60) -> [UInt8] {
        Spec.legacyReports([.init(address: address, data: data, rssi: rssi)])
    }

    @Test("After the lost timeout the device table shrinks back to the live advertisers")
    func tableShrinks() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan(options: ScanOptions(lostTimeout: .seconds(2))))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        for address in [Self.a, Self.b, Self.rotating] { bed.controller.sendLEMeta(Self.report(address)) }
        #expect(await sub.first(3).count == 3)
        #expect(await bed.central.scanStatistics().deviceCount == 3)

        // t = 1 s: a and b are heard again, the private address has moved on.
        await bed.clock.advance(by: .seconds(1))
        bed.controller.sendLEMeta(Self.report(Self.a, rssi: -61))
        bed.controller.sendLEMeta(Self.report(Self.b, rssi: -61))
        _ = await sub.first(5)
        // t = 2.5 s: the private address has been silent for 2.5 s.
        await bed.clock.advance(by: .milliseconds(1500))
        let events = await sub.first(6)
        #expect(events.count == 6)
        if events.count == 6, case .lost(let p) = events[5] { #expect("\(p.address.address)" == Self.rotating) } else { Issue.record("got \(events)") }
        #expect(await bed.central.scanStatistics().deviceCount == 2)

        // Nothing heard any more: the table empties, each device lost once.
        await bed.clock.advance(by: .seconds(3))
        let all = await sub.first(8)
        #expect(all.filter { if case .lost = $0 { true } else { false } }.count == 3)
        #expect(await bed.central.scanStatistics().deviceCount == 0)
        sub.cancel()
        await bed.central.close()
    }

    @Test("A device heard once leaves the table after the lost timeout")
    func singleDeviceExpires() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan(options: ScanOptions(lostTimeout: .seconds(2))))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        bed.controller.sendLEMeta(Self.report(Self.rotating))
        #expect(await sub.first(1).count == 1)
        #expect(await bed.central.scanStatistics().deviceCount == 1)
        await bed.clock.advance(by: .milliseconds(1900))
        #expect(await bed.central.scanStatistics().deviceCount == 1, "not before the timeout")
        await bed.clock.advance(by: .milliseconds(100))
        #expect(await sub.first(2).count == 2)
        #expect(await bed.central.scanStatistics().deviceCount == 0)
        sub.cancel()
        await bed.central.close()
    }

    @Test("A subscriber without a lost timeout keeps devices; once it leaves, the others' timeout empties the table")
    func expiryFollowsSubscribers() async throws {
        let bed = try await ScanBed.make()
        let timed = Collected(await bed.central.scan(options: ScanOptions(lostTimeout: .seconds(2))))
        let forever = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        await bed.central.withScanner { await $0.settled() }
        bed.controller.sendLEMeta(Self.report(Self.a))
        _ = await forever.first(1)
        await bed.clock.advance(by: .seconds(5))
        // The timed subscriber lost it; the table keeps it for the other one.
        #expect(await timed.first(2).count == 2)
        #expect(await bed.central.scanStatistics().deviceCount == 1)

        forever.cancel()
        await forever.task.value
        #expect(await bed.central.scanStatistics().subscriberCount == 1)
        await bed.clock.advance(by: .seconds(2))
        #expect(await bed.central.scanStatistics().deviceCount == 0)

        timed.cancel()
        await timed.task.value
        let stats = await bed.central.scanStatistics()
        #expect(stats.subscriberCount == 0)
        #expect(stats.deviceCount == 0)
        await bed.central.close()
    }

    @Test("A device cycling through company identifiers cannot grow its merged data past the bound")
    func mergedDataBounded() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan())
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        // Manufacturer Specific Data with company identifiers 0x0100...0x0163: each report
        // brings a kind of structure the merged data has not seen.
        for company in UInt16(0x0100)..<0x0164 {
            bed.controller.sendLEMeta(Self.report(Self.a, Spec.flags + Spec.manufacturer(company, [0x01])))
        }
        let events = await sub.first(100)
        #expect(events.count == 100)
        let largest = events.map { $0.peripheral.advertisingData.structures.count }.max() ?? 0
        #expect(largest <= Scanner.mergedStructureLimit)
        let last = events.last?.peripheral.advertisingData
        #expect(last?.manufacturerData.contains(ManufacturerSpecificData(companyID: 0x0163, data: [0x01])) == true)
        #expect(last?.structures.first == AdvertisingData(bytes: Spec.flags).structures.first)
        sub.cancel()
        await bed.central.close()
    }

    @Test("A subscriber with bufferingNewest(4) that does not read holds only the newest 4 events")
    func slowSubscriberBounded() async throws {
        let bed = try await ScanBed.make()
        let slow = await bed.central.scan(options: ScanOptions(allowDuplicates: true, bufferingPolicy: .bufferingNewest(4)))
        let witness = Collected(await bed.central.scan(options: ScanOptions(allowDuplicates: true, bufferingPolicy: .unbounded)))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        await bed.central.withScanner { await $0.settled() }
        for i in 0..<50 { bed.controller.sendLEMeta(Self.report(Self.a, rssi: Int8(-20 - i))) }
        #expect(await witness.first(50).count == 50)
        // Ending the streams hands the slow reader what it kept, then the end.
        await bed.central.withScanner { await $0.stopAll(error: nil) }
        var kept: [Int8] = []
        for try await event in slow { kept.append(event.peripheral.rssi) }
        #expect(kept == [-66, -67, -68, -69])
        await bed.central.close()
    }
}

/// The adapter state when the transport cannot be opened for lack of permission.
@Suite("Adapter authorization")
struct AdapterAuthorizationTests {
    /// A transport whose `start` fails with EPERM, as bind on an HCI user channel does without
    /// CAP_NET_ADMIN.
    final class DeniedTransport: HCITransport {
        let name = "denied"
        func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
            throw .permissionDenied(device: "hci0", errno: EPERM)
        }
        func send(_ packet: HCIPacket) throws(TransportError) { throw .closed(endpoint: name) }
        func close() {}
    }

    @Test("A central whose transport fails to start with EPERM is unauthorized")
    func centralUnauthorized() async throws {
        let central = Central(transport: DeniedTransport())
        let states = await central.stateEvents()
        await #expect(throws: TransportError.permissionDenied(device: "hci0", errno: EPERM)) { try await central.powerOn() }
        #expect(await central.state == .unauthorized)
        let snapshot = await central.snapshot
        #expect(snapshot.isAuthorized == false)
        #expect(snapshot.isPowered == false)
        #expect(snapshot.reason?.contains("EPERM") == true)
        var seen: [AdapterState] = []
        for await s in states {
            seen.append(s)
            if s == .unauthorized { break }
        }
        #expect(seen == [.unknown, .unauthorized])
        await #expect(throws: ScanError.adapterNotReady(.unauthorized)) {
            for try await _ in await central.scan() {}
        }
    }

    @Test("The error Central.open throws tells UI code the adapter state without a Central")
    func stateFromOpenError() {
        #expect(AdapterState(openError: TransportError.permissionDenied(device: "hci0", errno: EPERM)) == .unauthorized)
        #expect(AdapterState(openError: TransportError.system(operation: "bind", endpoint: "hci0", errno: EACCES)) == .unauthorized)
        #expect(AdapterState(openError: TransportError.serialAccessDenied(path: "/dev/ttyUSB0", errno: EACCES)) == .unauthorized)
        #expect(AdapterState(openError: TransportError.bluetoothUnsupported) == .unsupported)
        #expect(AdapterState(openError: TransportError.busy(device: "hci0")) == .transportLost)
        #expect(AdapterState(openError: TransportError.system(operation: "bind", endpoint: "hci0", errno: ENODEV)) == .transportLost)
        #expect(AdapterState(openError: CancellationError()) == .unknown)
    }
}
