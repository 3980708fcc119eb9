import ATT
import BLECore
import BLETestSupport
import GATTClient
import Dispatch
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif
import BLEWire
import BLETransport

/// The kernel tier's scenarios, run INSIDE the qemu guest by `KernelTierTests` (this same test
/// binary, started by `scripts/kernel-vm --vhci`). Enabled only when `BLE_IN_VM=1`.
///
/// The guest has adapter hci0 (public C0:00:00:00:00:01, a Bumble controller on /dev/vhci)
/// and the simulated peripheral HRM at random static F0:00:00:00:48:52 serving Heart Rate
/// 0x180D with Heart Rate Measurement 0x2A37 (notify, `00 48` once a second) and Body Sensor
/// Location 0x2A38 (read, `01`) — see Fixtures/peers/vhci_controller.py. Each test leaves
/// hci0 down, as it was found, and prints `KERNEL-TIER PASS <name>` as its last act (every
/// check before it is a `#require`), which the host side looks for.
///
/// Expected values: UUIDs 0x2800 Primary Service, 0x2803 Characteristic, 0x2902 Client
/// Characteristic Configuration (Assigned Numbers); CCCD value 0x0001 enables notifications
/// (Core Spec Vol 3, Part G, 3.3.3.3); the rest comes from the fixture peripheral above.
@Suite(
    "Kernel tier, guest side (inside the VM)",
    .serialized,
    .enabled(if: KernelTierGuest.inVM && KernelTierGuest.childRole == nil),
    .timeLimit(.minutes(5))
)
struct KernelTierGuestTests {
    @Test("HCIAdapters lists hci0 with its address; bringUp/bringDown switch its state")
    func adapterList() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringDown(index: 0) }
        let before = try #require(try HCIAdapters.list().first { $0.index == 0 })
        #expect(before.address == KernelTierGuest.adapterAddress)
        #expect(before.bus == "Virtual")
        try #require(!before.isUp, "hci0 should be down after HCIDEVDOWN: \(before)")
        try HCIAdapters.bringUp(index: 0)
        let up = try #require(try HCIAdapters.list().first { $0.index == 0 })
        try HCIAdapters.bringDown(index: 0)
        let down = try #require(try HCIAdapters.list().first { $0.index == 0 })
        try #require(up.isUp && !down.isUp, "up: \(up), down: \(down)")
        KernelTierGuest.pass("adapterList")
    }

    @Test("User channel: Central.open(\"hci0\"), connect to HRM, ATT over our own ACL path")
    func userChannelGATT() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringDown(index: 0) }
        let central = try await KernelTierGuest.afterRelease { try await Central.open("hci0") }
        let info = try #require(await central.controllerInfo)
        try #require(info.address == KernelTierGuest.adapterAddress, "\(info)")
        do {
            let link = try await central.connect(KernelTierGuest.hrm, timeout: .seconds(30))
            let channel = try await link.attChannel()
            let bearer = ATTBearer(channel: channel, scheduler: DispatchTimerScheduler(queue: central.executor.queue))
            try await KernelTierGuest.heartRateSession(bearer, notifications: true)
            try await link.disconnect()
        } catch {
            await central.close()
            throw error
        }
        await central.close()
        KernelTierGuest.pass("userChannelGATT")
    }

    @Test("User channel: scan(filter: [180D]) finds HRM; Peripheral reads Body Sensor Location and streams heart rate")
    func userChannelScanAndPeripheral() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringDown(index: 0) }
        let central = try await KernelTierGuest.afterRelease { try await Central.open("hci0") }
        do {
            let found = try await KernelTierGuest.scanForHRMWithAPI(central)
            try #require(found.address == KernelTierGuest.hrm && found.isConnectable, "\(found)")
            let link = try await central.connect(found.address, timeout: .seconds(30))
            let peripheral = try await Peripheral(connection: link)
            try await KernelTierGuest.peripheralSession(peripheral)
            try await link.disconnect()
        } catch {
            await central.close()
            throw error
        }
        await central.close()
        KernelTierGuest.pass("userChannelScanAndPeripheral")
    }

    @Test("Kernel mode: Peripheral over L2CAPSocketChannel reads Body Sensor Location and streams heart rate")
    func kernelModePeripheral() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        let executor = AdapterExecutor(label: "kernel-mode-peripheral")
        // The link must end before hci0 goes down: HRM keeps notifying on a link the kernel
        // forgot, and Bumble's vhci transport closes /dev/vhci (hci0 is gone) when the kernel
        // refuses those packets for an adapter that is down.
        let links = try LinkWatch()
        do {
            let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, executor: executor, timeout: .seconds(40))
            let peripheral = Peripheral(channel: channel, peer: KernelTierGuest.hrm)
            do {
                try await KernelTierGuest.peripheralSession(peripheral)
            } catch {
                channel.close()
                throw error
            }
            channel.close()
            try await links.endAll()
        } catch {
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        try HCIAdapters.bringDown(index: 0)
        KernelTierGuest.pass("kernelModePeripheral")
    }

    @Test("User channel errors: busy while up (and the fix works), no such adapter, permission denied")
    func userChannelErrors() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        do {
            let central = try await Central.open("hci0")
            await central.close()
            Issue.record("opening hci0 while it is up succeeded")
        } catch let error as TransportError {
            try #require(error == .busy(device: "hci0"), "\(error)")
            // The message's fix: take the adapter down, then the user channel opens.
            #expect("\(error)".contains("hci0"))
        }
        try HCIAdapters.bringDown(index: 0)
        let central = try await Central.open("hci0")
        #expect(await central.controllerInfo?.address == KernelTierGuest.adapterAddress)
        await central.close()

        do {
            let other = try await Central.open("hci7")
            await other.close()
            Issue.record("opening hci7 succeeded")
        } catch let error as TransportError {
            try #require(error == .noSuchAdapter(index: 7, available: [0]), "\(error)")
            #expect("\(error)".contains("hci0"))
        }

        // The same binary as user nobody: no CAP_NET_ADMIN, so binding the user channel fails.
        let child = try await KernelTierGuest.runChild(
            role: "unprivileged",
            asNobody: true,
            interruptAfterLine: nil)
        try #require(child.status == 0 && child.output.contains("KERNEL-TIER PASS unprivileged"), "\(child)")
        KernelTierGuest.pass("userChannelErrors")
    }

    @Test("Kernel mode: the kernel owns hci0; ATT over an L2CAP socket to HRM's CID 4")
    func kernelModeGATT() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        let executor = AdapterExecutor(label: "kernel-mode")
        do {
            // A raw-channel monitor learns the handle of the link the kernel creates. A bare
            // HCIHost, not a Central: a Central ends connections it did not ask for.
            let monitor = HCIHost(transport: try HCISocketTransport(index: 0, channel: .raw), executor: AdapterExecutor(label: "monitor"))
            try await monitor.start()
            let (handles, handleSink) = AsyncStream.makeStream(of: UInt16.self)
            let (disconnections, disconnectionSink) = AsyncStream.makeStream(of: UInt16.self)
            await monitor.addEventHandler { event in
                switch event {
                case .event(.leConnectionComplete(let c)) where c.status == .success: handleSink.yield(c.handle)
                case .event(.leEnhancedConnectionComplete(let c)) where c.status == .success: handleSink.yield(c.handle)
                case .event(.disconnectionComplete(let d)): disconnectionSink.yield(d.handle)
                default: break
                }
            }
            do {
                let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, executor: executor, timeout: .seconds(40))
                let bearer = ATTBearer(channel: channel, scheduler: DispatchTimerScheduler(queue: executor.queue))
                try await KernelTierGuest.heartRateSession(bearer, notifications: true)

                // The link ends under the socket (HCI_Disconnect through the raw channel, as
                // another program could): the channel reports it, the bearer fails requests.
                let handle = try #require(await KernelTierGuest.first(of: handles, within: .seconds(5)), "no LE Connection Complete seen on the raw channel")
                _ = try await monitor.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
                try #require(await KernelTierGuest.first(of: disconnections.filter { $0 == handle }, within: .seconds(10)) != nil, "no Disconnection Complete for 0x\(String(handle, radix: 16))")
                do {
                    _ = try await bearer.request(.readRequest(handle: 0x0001))
                    Issue.record("a request succeeded after the link was disconnected")
                } catch {
                    guard case .linkClosed(let why) = error else {
                        Issue.record("expected .linkClosed, got \(error)")
                        throw error
                    }
                    print("kernel mode, link disconnected under the socket: \(why)")
                }
                channel.close()
            } catch {
                await monitor.close()
                throw error
            }
            await monitor.close()
        } catch {
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        try HCIAdapters.bringDown(index: 0)
        try #require(try HCIAdapters.list().first { $0.index == 0 }?.isUp == false)
        KernelTierGuest.pass("kernelModeGATT")
    }

    @Test("Kernel mode: a peer that never answers gives .timeout after the limit")
    func kernelModeTimeout() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        let executor = AdapterExecutor(label: "kernel-mode-timeout")
        let absent = LEAddress(BluetoothAddress(rawValue: 0xF0_00_00_00_99_99), type: .random)
        do {
            let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: absent, executor: executor, timeout: .seconds(3))
            channel.close()
            Issue.record("connected to \(absent), which does not exist")
        } catch {
            if case .timeout(_, let ms) = error {
                #expect(ms == 3000)
            } else {
                Issue.record("expected .timeout, got \(error)")
            }
        }
        try HCIAdapters.bringDown(index: 0)
        KernelTierGuest.pass("kernelModeTimeout")
    }

    @Test("Kernel mode: L2CAPSocketChannel.connect with hci0 down fails with a typed error")
    func kernelModeAdapterDown() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringDown(index: 0) }
        let executor = AdapterExecutor(label: "kernel-mode-down")
        do {
            let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, executor: executor, timeout: .seconds(10))
            channel.close()
            Issue.record("connected with hci0 down")
        } catch {
            guard case .noAdapter = error else {
                Issue.record("expected .noAdapter, got \(error)")
                return
            }
        }
        KernelTierGuest.pass("kernelModeAdapterDown")
    }

    @Test("Raw channel with the adapter up: LE scan sees HRM; SIGINT leaves the scan disabled")
    func rawChannelScan() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        do {
            let central = try await Central.open("hci-raw:0")
            do {
                let report = try await KernelTierGuest.scanForHRM(central, timeout: .seconds(30))
                #expect(report.data.containsSubsequence([0x03, 0x03, 0x0D, 0x18]), "\(report.data)")
                try await KernelTierGuest.setScan(central, enabled: false)
                // The scanning API over the raw channel too.
                let found = try await KernelTierGuest.scanForHRMWithAPI(central)
                #expect(found.address == KernelTierGuest.hrm)
            } catch {
                await central.close()
                throw error
            }
            await central.close()

            // A program scanning on the raw channel is interrupted: it disables the scan on
            // its way out, and nothing reports advertisements any more.
            let child = try await KernelTierGuest.runChild(role: "scan-until-interrupted", asNobody: false, interruptAfterLine: "scanning")
            try #require(child.status == 0 && child.output.contains("KERNEL-TIER PASS scan-until-interrupted"), "\(child)")
            let watcher = try await Central.open("hci-raw:0")
            let quiet = await KernelTierGuest.noReports(watcher, for: .seconds(4))
            await watcher.close()
            try #require(quiet, "advertising reports still arrive after the interrupted program exited: the scan was left on")
            try #require(try HCIAdapters.list().first { $0.index == 0 }?.isUp == true, "the interrupted program changed hci0's power state")
        } catch {
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        try HCIAdapters.bringDown(index: 0)
        KernelTierGuest.pass("rawChannelScan")
    }
}

/// Child programs the guest tests start (this binary again, with `BLE_KERNEL_TIER_CHILD`).
@Suite(
    "Kernel tier, guest child programs",
    .enabled(if: KernelTierGuest.inVM && KernelTierGuest.childRole != nil),
    .timeLimit(.minutes(2))
)
struct KernelTierChildTests {
    @Test("As nobody: opening hci0 is denied (EPERM)", .enabled(if: KernelTierGuest.childRole == "unprivileged"))
    func unprivileged() async throws {
        try #require(getuid() != 0)
        do {
            let central = try await Central.open("hci0")
            await central.close()
            Issue.record("opened hci0 as uid \(getuid())")
        } catch let error as TransportError {
            guard case .permissionDenied(let device, let err) = error else {
                Issue.record("expected .permissionDenied, got \(error)")
                return
            }
            try #require(device == "hci0" && (err == EPERM || err == EACCES), "\(error)")
            #expect("\(error)".contains("setcap cap_net_admin,cap_net_raw"))
        }
        KernelTierGuest.pass("unprivileged")
    }

    /// Scans until SIGINT, then disables the scan and closes, like a CLI's Ctrl-C path.
    @Test("Scan on hci-raw:0 until SIGINT, then clean up", .enabled(if: KernelTierGuest.childRole == "scan-until-interrupted"))
    func scanUntilInterrupted() async throws {
        signal(SIGINT, SIG_IGN)
        let interrupts = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let (interrupted, interrupt) = AsyncStream.makeStream(of: Bool.self)
        interrupts.setEventHandler { interrupt.yield(true) }
        interrupts.resume()
        defer { interrupts.cancel() }

        let central = try await Central.open("hci-raw:0")
        _ = try await KernelTierGuest.scanForHRM(central, timeout: .seconds(30))
        print("scanning")
        fflush(nil)
        let got = await KernelTierGuest.first(of: interrupted, within: .seconds(60))
        try await KernelTierGuest.setScan(central, enabled: false)
        await central.close()
        try #require(got != nil, "no SIGINT within 60 s")
        KernelTierGuest.pass("scan-until-interrupted")
    }
}

enum KernelTierGuest {
    static let inVM = ProcessInfo.processInfo.environment["BLE_IN_VM"] == "1"
    static let childRole = ProcessInfo.processInfo.environment["BLE_KERNEL_TIER_CHILD"]
    static let hrm = LEAddress(BluetoothAddress(rawValue: 0xF0_00_00_00_48_52), type: .random)
    static let adapterAddress = BluetoothAddress(rawValue: 0xC0_00_00_00_00_01)

    static func pass(_ name: String) {
        print("KERNEL-TIER PASS \(name)")
        fflush(nil)
    }

    /// Runs `operation`, retrying EBUSY on hci0 for up to 3 s. `Central.close()` returns
    /// before the user-channel socket is closed (the transport closes the fd in its dispatch
    /// sources' cancel handlers, later on the adapter queue), and until then the kernel
    /// refuses HCIDEVUP, HCIDEVDOWN and another user channel on hci0 with EBUSY.
    static func afterRelease<T>(_ operation: () async throws -> T) async throws -> T {
        var attempts = 0
        while true {
            do {
                return try await operation()
            } catch let error as TransportError where error == .busy(device: "hci0") && attempts < 30 {
                attempts += 1
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Discovers the Heart Rate service, reads Body Sensor Location and (optionally)
    /// subscribes to Heart Rate Measurement and waits for a notification.
    static func heartRateSession(_ bearer: ATTBearer, notifications: Bool) async throws {
        let mtu = try await bearer.exchangeMTU()
        try #require(mtu >= ATTBearer.defaultMTU)

        // Read By Group Type, Primary Service, over the whole range (Vol 3, Part G, 4.4.1).
        var services: [ATTGroupValue] = []
        var start: UInt16 = 0x0001
        while let response = try await requestUnlessNotFound(bearer, .readByGroupTypeRequest(range: ATTHandleRange(start: start, end: 0xFFFF), type: BluetoothUUID(uuid16: 0x2800))) {
            guard case .readByGroupTypeResponse(let groups) = response, let last = groups.last else { break }
            services += groups
            if last.endGroupHandle == 0xFFFF { break }
            start = last.endGroupHandle + 1
        }
        let heartRate = try #require(services.first { $0.value == [0x0D, 0x18] }, "services: \(services)")

        // Characteristic declarations in the service (Vol 3, Part G, 4.6.1).
        var characteristics: [(uuid: UInt16, valueHandle: UInt16, declaration: UInt16)] = []
        start = heartRate.handle
        while start <= heartRate.endGroupHandle,
              let response = try await requestUnlessNotFound(bearer, .readByTypeRequest(range: ATTHandleRange(start: start, end: heartRate.endGroupHandle), type: BluetoothUUID(uuid16: 0x2803))) {
            guard case .readByTypeResponse(let entries) = response, let last = entries.last else { break }
            for entry in entries where entry.value.count == 5 {
                let valueHandle = UInt16(entry.value[1]) | UInt16(entry.value[2]) << 8
                let uuid = UInt16(entry.value[3]) | UInt16(entry.value[4]) << 8
                characteristics.append((uuid, valueHandle, entry.handle))
            }
            if last.handle == 0xFFFF { break }
            start = last.handle + 1
        }
        let location = try #require(characteristics.first { $0.uuid == 0x2A38 }, "characteristics: \(characteristics)")
        let measurement = try #require(characteristics.first { $0.uuid == 0x2A37 }, "characteristics: \(characteristics)")

        guard case .readResponse(let value) = try await bearer.request(.readRequest(handle: location.valueHandle)) else {
            Issue.record("Read Request got no Read Response")
            return
        }
        try #require(value == [0x01], "Body Sensor Location: \(value)")
        guard notifications else { return }

        // The CCCD follows the measurement's value (Find Information in its range).
        let end = characteristics.filter { $0.declaration > measurement.valueHandle }.map { $0.declaration - 1 }.min() ?? heartRate.endGroupHandle
        guard case .findInformationResponse(_, let descriptors) = try await bearer.request(.findInformationRequest(ATTHandleRange(start: measurement.valueHandle + 1, end: end))) else {
            Issue.record("Find Information got no response")
            return
        }
        let cccd = try #require(descriptors.first { $0.uuid == BluetoothUUID(uuid16: 0x2902) }, "descriptors: \(descriptors)")

        let (values, sink) = AsyncStream.makeStream(of: ATTValueEvent.self)
        await bearer.setValueHandler { sink.yield($0) }
        guard case .writeResponse = try await bearer.request(.writeRequest(handle: cccd.handle, value: [0x01, 0x00])) else {
            Issue.record("Write Request got no Write Response")
            return
        }
        let measurementHandle = measurement.valueHandle
        let event = await first(of: values.filter { $0.handle == measurementHandle }, within: .seconds(20))
        let notified = try #require(event, "no Heart Rate Measurement notification within 20 s")
        try #require(!notified.isIndication && notified.value == [0x00, 72], "\(notified)")
    }

    /// `Central.scan(filter:)` for 180D until HRM shows up (bounded).
    static func scanForHRMWithAPI(_ central: Central) async throws -> DiscoveredPeripheral {
        let events = await central.scan(filter: ScanFilter(services: [BluetoothUUID(uuid16: 0x180D)]))
        let found = await first(of: events.compactMap { event -> DiscoveredPeripheral? in
            if case .discovered(let p) = event, p.address == hrm { return p }
            return nil
        }, within: .seconds(30))
        return try #require(found, "scan(filter: [180D]) did not find \(hrm) within 30 s")
    }

    /// GATTClient: Body Sensor Location reads as chest, Heart Rate Measurement notifies 72 bpm.
    static func peripheralSession(_ peripheral: Peripheral) async throws {
        let heartRate = ServiceIdentifier(uuid: BluetoothUUID(uuid16: 0x180D))
        let location = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0x2A38), service: heartRate)
        let measurement = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0x2A37), service: heartRate)
        let services = try await peripheral.services()
        try #require(services.contains { $0.uuid == BluetoothUUID(uuid16: 0x180D) }, "\(services)")
        try #require(try await peripheral.read(location, as: BodySensorLocation.self) == .chest)
        let reading = await first(of: try await peripheral.subscribe(to: measurement, as: HeartRateMeasurement.self), within: .seconds(20))
        let value = try #require(reading, "no Heart Rate Measurement within 20 s")
        try #require(value.beatsPerMinute == 72, "\(value)")
    }

    /// The response, or nil for an Error Response Attribute Not Found (the end of a discovery).
    static func requestUnlessNotFound(_ bearer: ATTBearer, _ pdu: ATTPDU) async throws -> ATTPDU? {
        do {
            return try await bearer.request(pdu)
        } catch {
            if case .errorResponse(let code, _, _) = error, code == .attributeNotFound { return nil }
            throw error
        }
    }

    /// The first element of `sequence`, or nil after `limit`.
    static func first<S: AsyncSequence & Sendable>(of sequence: S, within limit: Duration) async -> S.Element? where S.Element: Sendable {
        await withTaskGroup(of: S.Element?.self) { group in
            group.addTask {
                do {
                    for try await element in sequence { return element }
                } catch {}
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let result = await group.next() ?? nil
            group.cancelAll()
            return result
        }
    }

    /// One advertisement seen, from a legacy or an extended advertising report.
    struct Seen: Sendable {
        var address: BluetoothAddress
        var data: [UInt8]
    }

    /// Advertisements seen by `central`'s host from now on. Bumble's controller answers a
    /// legacy scan with LE Extended Advertising Reports when it supports extended
    /// advertising, so both kinds count.
    static func reports(_ central: Central) async -> AsyncStream<Seen> {
        let (stream, sink) = AsyncStream.makeStream(of: Seen.self)
        await central.host.addEventHandler { event in
            switch event {
            case .event(.leAdvertisingReport(let reports)):
                for report in reports { sink.yield(Seen(address: report.address, data: report.data)) }
            case .event(.leExtendedAdvertisingReport(let reports)):
                for report in reports { sink.yield(Seen(address: report.address, data: report.data)) }
            default:
                break
            }
        }
        return stream
    }

    /// LE Set Scan Enable (Vol 4, Part E, 7.8.11).
    static func setScan(_ central: Central, enabled: Bool) async throws {
        _ = try await central.host.send(HCICommand.leSetScanEnable(HCICommand.LESetScanEnable(enable: enabled)))
    }

    /// Passive legacy scan (Vol 4, Part E, 7.8.10) until HRM's advertisement arrives.
    static func scanForHRM(_ central: Central, timeout: Duration) async throws -> Seen {
        let stream = await reports(central)
        // LE Set Scan Parameters is disallowed while scanning. A scan can be left running by
        // the kernel: a cancelled kernel-mode connect stops its background scan from a work
        // queue, which HCIDEVDOWN drains without running, and Bumble's controller keeps
        // scanning across HCI_Reset. Disabling first is allowed in any state.
        try await setScan(central, enabled: false)
        _ = try await central.host.send(HCICommand.leSetScanParameters(HCICommand.LESetScanParameters(scanType: 0, scanInterval: 0x0060, scanWindow: 0x0030)))
        try await setScan(central, enabled: true)
        let hrmAddress = hrm.address
        let report = await first(of: stream.filter { $0.address == hrmAddress }, within: timeout)
        return try #require(report, "no advertising report from \(hrm) within \(timeout)")
    }

    /// True when no advertising report arrives on `central` for `duration`.
    static func noReports(_ central: Central, for duration: Duration) async -> Bool {
        await first(of: reports(central), within: duration) == nil
    }

    struct Child: CustomStringConvertible {
        var status: Int32
        /// stdout and stderr together (stderr alone when stdout went to a file).
        var output: String
        var description: String { "child exit status \(status)\n--- output ---\n\(output)" }
    }

    /// Runs this test binary again with `BLE_KERNEL_TIER_CHILD=role` (optionally as user
    /// nobody through setpriv); with `interruptAfterLine`, sends SIGINT once the child printed
    /// that line. The child is killed if it has not exited within 120 s. (ChildProcess and a
    /// reader thread: inside the guest, Foundation's Process logged that it could not create
    /// its CFSocket wakeup socket pair and never reported the child's exit.)
    static func runChild(role: String, asNobody: Bool, interruptAfterLine: String?) async throws -> Child {
        let binary = try KernelTierVM.testBinary()
        var arguments = [binary, "--testing-library", "swift-testing", "--filter", "KernelTierChildTests"]
        if asNobody { arguments = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + arguments }
        var environment = ProcessInfo.processInfo.environment
        environment["BLE_KERNEL_TIER_CHILD"] = role
        let interrupted = Mutex(interruptAfterLine == nil)
        return try await runProgram(arguments, environment: environment) { line, pid in
            let send = interrupted.withLock { done in
                guard !done, line == interruptAfterLine else { return false }
                done = true
                return true
            }
            if send { kill(pid, SIGINT) }
        }
    }

    /// Runs `arguments` (stdin /dev/null or the file `stdin`; stdout and stderr together, or
    /// stdout into the file `stdout`) and calls `onLine` with each line it prints and its pid,
    /// on a reader thread. The program is killed if it has not exited within 120 s.
    static func runProgram(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
                           stdin: String? = nil, stdout: String? = nil,
                           onLine: @escaping @Sendable (String, pid_t) -> Void = { _, _ in }) async throws -> Child {
        let child = try ChildProcess(path: arguments[0], Array(arguments.dropFirst()), environment: environment,
                                     stdin: stdin.map { .file($0) } ?? .null, stdout: stdout.map { .file($0) } ?? .pipe, stderr: .pipe)
        let (childPID, readEnd) = (child.pid, try #require(child.pipe))
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            kill(childPID, SIGKILL)
        }
        defer { watchdog.cancel() }
        return await withCheckedContinuation { (c: CheckedContinuation<Child, Never>) in
            // Blocking reads and waitpid on a thread of their own, not the test's executor.
            let thread = Thread {
                var output = [UInt8]()
                var buffer = [UInt8](repeating: 0, count: 4096)
                var lineStart = 0
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    output += buffer[..<n]
                    while let end = output[lineStart...].firstIndex(of: UInt8(ascii: "\n")) {
                        onLine(String(decoding: output[lineStart..<end], as: UTF8.self), childPID)
                        lineStart = end + 1
                    }
                }
                _ = close(readEnd)
                let status = ChildProcess.wait(childPID)
                c.resume(returning: Child(status: status, output: String(decoding: output, as: UTF8.self)))
            }
            thread.start()
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
