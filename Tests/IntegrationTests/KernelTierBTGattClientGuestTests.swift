import BLETransport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// BlueZ's own GATT client against the built `ble serve`, run INSIDE the qemu guest by
/// `KernelTierBTGattClientTests` (`scripts/kernel-vm --vhci --second-adapter`): btgatt-client
/// (BlueZ 5.66, from Debian's bluez-source) on hci0 makes the kernel's LE link and ATT socket
/// to `ble -d hci1 serve` (public C0:00:00:00:00:02) and drives them with BlueZ's GATT code,
/// independent of this project's client.
///
/// Expected values come from Fixtures/gatt/serve.yaml, from `ble serve`'s documented output
/// lines (docs/cli.md) and from btgatt-client's output formats (BlueZ tools/btgatt-client.c:
/// 128-bit UUIDs in lower case, value bytes as "%02x ").
@Suite(
    "Kernel tier, BlueZ's btgatt-client against ble serve (inside the VM)",
    .serialized,
    .enabled(if: KernelTierGuest.inVM && KernelTierGuest.childRole == nil && ProcessInfo.processInfo.environment["BLE_KERNEL_TIER_BTGATT"] != nil),
    .timeLimit(.minutes(6))
)
struct KernelTierBTGattClientGuestTests {
    static let kernelAddress = KernelTierServeGuestTests.kernelAddress
    static let level = "00002a19-0000-1000-8000-00805f9b34fb"
    static let long = "12345678-1234-5678-1234-56789abcdef1"

    /// A FIFO a program reads as its stdin, held open for writing (O_RDWR does not wait for a
    /// reader) so the program's open does not block and its stdin never reaches end of file.
    final class Feed: Sendable {
        let path: String
        let fd: Int32

        init(_ name: String) throws {
            path = "/tmp/\(name)-stdin-\(getpid())"
            try #require(mkfifo(path, 0o600) == 0, "mkfifo \(path): errno \(errno)")
            fd = open(path, O_RDWR)
            let openError = errno
            if fd < 0 { unlink(path) }
            try #require(fd >= 0, "open \(path): errno \(openError)")
        }

        func send(_ line: String) throws {
            let bytes = Array((line + "\n").utf8)
            try #require(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count, "writing \(line) to \(path): errno \(errno)")
        }

        deinit {
            close(fd)
            unlink(path)
        }
    }

    @Test("btgatt-client on hci0 connects to ble serve on hci1: discovery names the served UUIDs, read-value prints 64, write-value shows on ble serve and reads back, register-notify gets the value fed on ble serve's stdin")
    func btgattClientAgainstServe() async throws {
        let client = try #require(ProcessInfo.processInfo.environment["BLE_KERNEL_TIER_BTGATT"])
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        let serveFeed = try Feed("serve")
        let clientFeed = try Feed("btgatt")
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment.removeValue(forKey: "BLE_LOG")
        let serveEnvironment = environment
        let served = KernelTierServeGuestTests.ServeLines()
        let serve = Task {
            defer { served.finish() }
            return try await KernelTierGuest.runProgram(
                [BLETool.executable.path, "-d", "hci1", "serve", BLETool.fixture("gatt/serve.yaml").path, "--name", "kserve", "--notify", "2A19"],
                environment: serveEnvironment, stdin: serveFeed.path) { line, pid in served.add(line, from: pid) }
        }
        let links = try LinkWatch()
        do {
            try #require(await served.next { $0.hasPrefix("serving 2 services from ") } != nil, "ble serve did not start advertising: \(served.all)")
            let printed = KernelTierServeGuestTests.ServeLines()
            // stdbuf: line-buffered stdout through the pipe (btgatt-client flushes only at its prompt).
            let btgatt = Task {
                defer { printed.finish() }
                return try await KernelTierGuest.runProgram(
                    ["/usr/bin/stdbuf", "-oL", client, "-i", "hci0", "-d", "C0:00:00:00:00:02", "-t", "public"],
                    stdin: clientFeed.path) { line, pid in printed.add(Self.plain(line), from: pid) }
            }
            do {
                try await Self.session(printed: printed, served: served, client: clientFeed, serve: serveFeed)
            } catch {
                if let pid = printed.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
                print("btgatt-client:\n\((try? await btgatt.value)?.output ?? "")")
                throw error
            }
            if let pid = printed.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
            let run = try await btgatt.value
            print("btgatt-client against ble serve:\n\(run.output)")
            try await links.endAll()
            try #require(await served.next { $0 == "disconnected \(Self.kernelAddress)" } != nil, "ble serve did not report the link's end: \(served.all)")
        } catch {
            if let pid = served.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
            _ = try? await serve.value
            try? await links.endAll()
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        if let pid = served.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
        let run = try await serve.value
        try HCIAdapters.bringDown(index: 0)
        print("ble serve against btgatt-client:\n\(run.output)")
        try #require(run.status == 0, "\(run)")
        KernelTierGuest.pass("btgattClientAgainstServe")
        try await Self.securityScenes(client: client)
    }

    /// Discovery, a read, a write seen on ble serve's stdout and read back, a notification fed
    /// through ble serve's stdin.
    static func session(printed: KernelTierServeGuestTests.ServeLines, served: KernelTierServeGuestTests.ServeLines,
                        client: Feed, serve: Feed) async throws {
        try #require(await printed.next { $0 == "GATT discovery procedures complete" } != nil, "btgatt-client did not finish discovery: \(printed.all)")
        // "service - start: 0x0001, end: 0x0005, type: primary, uuid: ...", then its
        // "charac - start: ..., value: 0x0003, props: 0x12, ext_props: 0x0000, uuid: ..." lines.
        let endings = [
            "type: primary, uuid: 0000180f-0000-1000-8000-00805f9b34fb",
            "type: primary, uuid: 12345678-1234-5678-1234-56789abcdef0",
            "props: 0x12, ext_props: 0x0000, uuid: \(level)",
            "props: 0x0a, ext_props: 0x0000, uuid: \(long)",
            "props: 0x06, ext_props: 0x0000, uuid: 12345678-1234-5678-1234-56789abcdef2",
            "props: 0x22, ext_props: 0x0000, uuid: 12345678-1234-5678-1234-56789abcdef3",
        ]
        @Sendable func listed() -> Bool { endings.allSatisfy { e in printed.all.contains { $0.hasSuffix(e) } } }
        var complete = listed()
        if !complete { complete = await printed.next { _ in listed() } != nil }
        try #require(complete, "btgatt-client's service list lacks a served UUID: \(printed.all)")
        let levelHandle = try #require(valueHandle(of: level, in: printed.all), "\(printed.all)")
        let longHandle = try #require(valueHandle(of: long, in: printed.all), "\(printed.all)")

        try client.send("read-value \(levelHandle)")
        try #require(await printed.next { $0.hasPrefix("Read value") } == "Read value (1 bytes): 64 ", "\(printed.all)")
        try #require(await served.next { $0.hasPrefix("read ") } == "read \(kernelAddress) 2A19 handle \(levelHandle.uppercasedHex): 0x64 (1 byte, uint 100, \"d\") -> 100 %", "\(served.all)")

        // btgatt-client reads each octet with strtol base 0: "0x68", not "68" (decimal 68 = 0x44).
        try client.send("write-value \(longHandle) 0x68 0x69")
        try #require(await printed.next { $0.hasPrefix("Write ") } == "Write successful", "\(printed.all)")
        try #require(await served.next { $0.hasPrefix("write ") } == "write \(kernelAddress) 12345678-1234-5678-1234-56789ABCDEF1 handle \(longHandle.uppercasedHex): 0x6869 (2 bytes, uint 26984, \"hi\")", "\(served.all)")
        try client.send("read-value \(longHandle)")
        try #require(await printed.next { $0.hasPrefix("Read value") } == "Read value (2 bytes): 68 69 ", "\(printed.all)")

        try client.send("register-notify \(levelHandle)")
        try #require(await printed.next { $0.hasPrefix("Registered notify handler") } == "Registered notify handler!", "\(printed.all)")
        try #require(await served.next { $0.hasPrefix("subscribe ") } == "subscribe \(kernelAddress) 2A19 handle \(levelHandle.uppercasedHex): notifications", "\(served.all)")
        try serve.send("hex:5A")
        try #require(await printed.next { $0.contains("Handle Value Not/Ind") } == "\tHandle Value Not/Ind: \(levelHandle) - (1 bytes): 5a ", "\(printed.all)")
        try #require(await served.next { $0.hasPrefix("sent ") } == "sent 2A19: 0x5A (1 byte, uint 90, \"Z\") -> 90 % (notified 1, indications confirmed 0)", "\(served.all)")
    }

    /// The "value: 0xNNNN" handle of the characteristic line ending in `uuid`.
    static func valueHandle(of uuid: String, in lines: [String]) -> String? {
        guard let line = lines.first(where: { $0.contains("charac - ") && $0.hasSuffix("uuid: \(uuid)") }),
              let range = line.range(of: "value: 0x") else { return nil }
        let digits = line[range.upperBound...].prefix(4)
        guard digits.count == 4, digits.allSatisfy(\.isHexDigit) else { return nil }
        return "0x" + digits
    }

    /// `line` without ANSI colour sequences, carriage returns and the "[GATT client]# " prompts.
    static func plain(_ line: String) -> String {
        var out = ""
        var escape = false
        for c in line where c != "\r" {
            if escape {
                if c.isLetter { escape = false }
            } else if c == "\u{1B}" {
                escape = true
            } else {
                out.append(c)
            }
        }
        while out.hasPrefix("[GATT client]# ") { out.removeFirst("[GATT client]# ".count) }
        return out
    }
}

extension String {
    /// "0x0003" -> "0x0003" with upper-case hex digits, as ble serve prints handles.
    fileprivate var uppercasedHex: String { "0x" + dropFirst(2).uppercased() }
}
