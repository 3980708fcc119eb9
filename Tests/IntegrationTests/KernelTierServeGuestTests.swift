import BLECore
import BLETestSupport
import Foundation
import GATTClient
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif
import BLEWire
import BLETransport

/// The kernel as the central against the built `ble serve`, run INSIDE the qemu guest by
/// `KernelTierServeTests` (`scripts/kernel-vm --vhci --second-adapter`): the guest has two
/// adapters on one Bumble link, hci0 (public C0:00:00:00:00:01) powered on and owned by the
/// kernel, and hci1 (public C0:00:00:00:00:02), down, which `ble -d hci1 serve` drives
/// through the HCI user channel. The kernel creates the LE link and carries ATT on its L2CAP
/// socket (CID 4); the requests on it come from `Peripheral(channel:)`.
///
/// Expected values come from Fixtures/gatt/serve.yaml (Battery Level 0x2A19 = 0x64, the
/// 128-bit service and characteristics) and from `ble serve`'s documented output lines
/// (docs/cli.md); 0x180F Battery Service and 0x2A19 Battery Level are Assigned Numbers.
@Suite(
    "Kernel tier, the kernel as central against ble serve (inside the VM)",
    .serialized,
    .enabled(if: KernelTierGuest.inVM && KernelTierGuest.childRole == nil && ProcessInfo.processInfo.environment["BLE_KERNEL_TIER_SERVE"] == "1"),
    .timeLimit(.minutes(4))
)
struct KernelTierServeGuestTests {
    static let serveAddress = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_02), type: .public)
    static let kernelAddress = "C0:00:00:00:00:01"
    static let battery = ServiceIdentifier(uuid: BluetoothUUID(uuid16: 0x180F))
    static let level = CharacteristicIdentifier(uuid: BluetoothUUID(uuid16: 0x2A19), service: battery)
    static let custom = ServiceIdentifier(uuid: "12345678-1234-5678-1234-56789ABCDEF0")
    static let long = CharacteristicIdentifier(uuid: "12345678-1234-5678-1234-56789ABCDEF1", service: custom)
    static let longValue = Array("0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789".utf8)

    /// `ble serve`'s output lines (stdout and stderr), in order, as they arrive.
    final class ServeLines: Sendable {
        let lines: AsyncStream<String>
        private let sink: AsyncStream<String>.Continuation
        private let seen = Mutex<[String]>([])
        let pid = Mutex<pid_t?>(nil)

        init() {
            (lines, sink) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(256))
        }

        func add(_ line: String, from pid: pid_t) {
            self.pid.withLock { $0 = pid }
            seen.withLock { $0.append(line) }
            sink.yield(line)
        }

        func finish() { sink.finish() }
        var all: [String] { seen.withLock { $0 } }

        /// The next line `matching` prints (earlier lines are passed over), or nil after `limit`.
        func next(within limit: Duration = .seconds(60), _ matching: @escaping @Sendable (String) -> Bool) async -> String? {
            await KernelTierGuest.first(of: lines.filter(matching), within: limit)
        }
    }

    @Test("The kernel on hci0 connects to ble serve on hci1: discovers its services, reads Battery Level 0x64, writes a value that ble serve prints and reads back, subscribes and gets the value fed on ble serve's stdin")
    func kernelCentralAgainstServe() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        // ble serve's stdin: a FIFO this test holds open for writing (O_RDWR does not wait
        // for a reader), so the program's open does not block and its stdin stays open.
        let fifo = "/tmp/serve-stdin-\(getpid())"
        try #require(mkfifo(fifo, 0o600) == 0, "mkfifo \(fifo): errno \(errno)")
        let feed = open(fifo, O_RDWR)
        try #require(feed >= 0, "open \(fifo): errno \(errno)")
        defer {
            close(feed)
            unlink(fifo)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment.removeValue(forKey: "BLE_LOG")
        let serveEnvironment = environment
        let output = ServeLines()
        let serve = Task {
            defer { output.finish() }
            return try await KernelTierGuest.runProgram(
                [BLETool.executable.path, "-d", "hci1", "serve", BLETool.fixture("gatt/serve.yaml").path, "--name", "kserve", "--notify", "2A19"],
                environment: serveEnvironment, stdin: fifo) { line, pid in output.add(line, from: pid) }
        }
        let links = try LinkWatch()
        do {
            try #require(await output.next { $0.hasPrefix("serving 2 services from ") } != nil, "ble serve did not start advertising: \(output.all)")
            let started = ContinuousClock.now
            let executor = AdapterExecutor(label: "kernel-central")
            let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: Self.serveAddress, executor: executor, timeout: .seconds(40))
            print("kernel central: ATT socket to \(Self.serveAddress) open after \(ContinuousClock.now - started)")
            let peripheral = Peripheral(channel: channel, peer: Self.serveAddress)
            do {
                try await Self.session(peripheral, output: output, feed: feed)
            } catch {
                channel.close()
                throw error
            }
            channel.close()
            try await links.endAll()
            try #require(await output.next { $0 == "disconnected \(Self.kernelAddress)" } != nil, "ble serve did not report the link's end: \(output.all)")
            print("kernel central against ble serve: \(ContinuousClock.now - started) from connect to disconnect")
        } catch {
            if let pid = output.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
            _ = try? await serve.value
            try? await links.endAll()
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        if let pid = output.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
        let run = try await serve.value
        try HCIAdapters.bringDown(index: 0)
        print("ble serve against the kernel:\n\(run.output)")
        try #require(run.status == 0, "\(run)")
        try #require(run.output.contains("SIGTERM: stopping"), "\(run)")
        KernelTierGuest.pass("kernelCentralAgainstServe")
    }

    /// Discovery, a read, a write seen on ble serve's stdout and read back, a notification
    /// fed through its stdin.
    static func session(_ peripheral: Peripheral, output: ServeLines, feed: Int32) async throws {
        let services = try await peripheral.services()
        try #require(services.map(\.uuid).contains(BluetoothUUID(uuid16: 0x180F)), "\(services)")
        try #require(services.map(\.uuid).contains(custom.uuid), "\(services)")
        let customCharacteristics = try await peripheral.characteristics(of: custom).map(\.uuid)
        let expected = [long, CharacteristicIdentifier(uuid: "12345678-1234-5678-1234-56789ABCDEF2", service: custom),
                        CharacteristicIdentifier(uuid: "12345678-1234-5678-1234-56789ABCDEF3", service: custom)].map(\.uuid)
        try #require(customCharacteristics == expected, "\(customCharacteristics)")
        let batteryCharacteristics = try await peripheral.characteristics(of: battery)
        let levelHandle = try #require(batteryCharacteristics.first { $0.uuid == level.uuid }?.valueHandle, "\(batteryCharacteristics)")
        let longHandle = try #require(try await peripheral.characteristics(of: custom).first { $0.uuid == long.uuid }?.valueHandle)
        func at(_ handle: UInt16) -> String { "handle 0x" + String(handle, radix: 16, uppercase: true).leftPadded(to: 4) }

        try #require(try await peripheral.read(level) == [0x64])
        try #require(await output.next { $0.hasPrefix("read ") } == "read \(kernelAddress) 2A19 \(at(levelHandle)): 0x64 (1 byte, uint 100, \"d\") -> 100 %", "\(output.all)")
        // 100 octets: longer than the default ATT_MTU, read to the end with Read Blob.
        try #require(try await peripheral.read(long) == longValue)

        try await peripheral.write(Array("hi".utf8), to: long)
        let written = await output.next { $0.hasPrefix("write ") }
        try #require(written == "write \(kernelAddress) \(long.uuid) \(at(longHandle)): 0x6869 (2 bytes, uint 26984, \"hi\")", "\(output.all)")
        try #require(try await peripheral.read(long) == Array("hi".utf8))

        let values = try await peripheral.subscribe(to: level)
        let subscribed = await output.next { $0.hasPrefix("subscribe ") }
        try #require(subscribed == "subscribe \(kernelAddress) 2A19 \(at(levelHandle)): notifications", "\(output.all)")
        let line = Array("hex:5A\n".utf8)
        try #require(line.withUnsafeBytes { write(feed, $0.baseAddress, $0.count) } == line.count, "writing to ble serve's stdin: errno \(errno)")
        let notified = await KernelTierGuest.first(of: values, within: .seconds(30))
        try #require(notified == [0x5A], "no notification 0x5A within 30 s: \(output.all)")
        let sent = await output.next { $0.hasPrefix("sent ") }
        try #require(sent == "sent 2A19: 0x5A (1 byte, uint 90, \"Z\") -> 90 % (notified 1, indications confirmed 0)", "\(output.all)")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
