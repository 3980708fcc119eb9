import BLECore
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Kernel-tier scenarios (inside the VM, see `KernelTierGuestTests`) for the built `ble`
/// binary's `l2cap` command on a kernel-owned adapter (`-d hci-raw:0`: the kernel's L2CAP
/// sockets carry the channel). The peer is HRM of Fixtures/peers/vhci_controller.py: its echo
/// server on LE_PSM 0x0080 (MTU 2048, MPS 247) and its call-back server on 0x0083.
extension KernelTierGuestTests {
    /// `ble -d hci-raw:0 l2cap HRM ARGS`, stdin from the file `input`, stdout into a file;
    /// the program's stderr lines go to `onLine`.
    static func l2capCommand(_ arguments: [String], input: [UInt8], onLine: @escaping @Sendable (String, pid_t) -> Void = { _, _ in }) async throws -> (KernelTierGuest.Child, [UInt8]) {
        let inPath = "/tmp/l2cap-in-\(getpid())", outPath = "/tmp/l2cap-out-\(getpid())"
        try Data(input).write(to: URL(fileURLWithPath: inPath))
        defer {
            unlink(inPath)
            unlink(outPath)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        let run = try await KernelTierGuest.runProgram([BLETool.executable.path, "-d", "hci-raw:0", "l2cap", "\(KernelTierGuest.hrm.address)"] + arguments,
                                       environment: environment, stdin: inPath, stdout: outPath, onLine: onLine)
        let output = (try? Data(contentsOf: URL(fileURLWithPath: outPath))).map { [UInt8]($0) } ?? []
        return (run, output)
    }

    /// Runs `body` with hci0 up (the kernel owns it) and a `LinkWatch` of its links; then, also
    /// when `body` throws, ends the links (HRM must advertise again for the next scenario) and
    /// powers hci0 down. Prints `name`'s pass line when all of it succeeded.
    static func withKernelAdapter(passing name: String, _ body: (LinkWatch) async throws -> Void) async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        let links = try LinkWatch()
        do {
            try await body(links)
            try await links.endAll()
        } catch {
            try? await links.endAll()
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        try HCIAdapters.bringDown(index: 0)
        KernelTierGuest.pass(name)
    }

    @Test("ble -d hci-raw:0 l2cap --psm 0x0080: 64 KiB through the kernel's socket to HRM's echo server come back byte-exact, --json prints the SDU, a refused PSM exits 1 with the errno")
    func l2capCommandOverTheKernel() async throws {
        try await Self.withKernelAdapter(passing: "l2capCommandOverTheKernel") { links in
            let data = ChannelEcho.random(64 * 1024)
            let (run, echoed) = try await Self.l2capCommand(["--psm", "0x0080", "--idle", "4", "--timeout", "40"], input: data)
            print("ble l2cap over the kernel: \(run.output)")
            try #require(run.status == 0, "\(run)")
            try #require(echoed.count == data.count && SHA256.hash(echoed) == SHA256.hash(data), "\(echoed.count) bytes back\n\(run)")
            try #require(echoed == data)
            try #require(run.output.contains("channel open through the kernel on hci0: PSM 0x0080"), "\(run)")
            // Each 2048-byte read of the file is one SDU of the echo server's MTU, and comes back as one.
            try #require(run.output.contains("sent 65536 bytes in 32 SDUs, received 65536 bytes in 32 SDUs in "), "\(run)")
            try #require(run.output.contains("the kernel handled the credits"), "\(run)")
            // Each run starts without a link: right after a run the kernel is still ending its
            // link (it disconnects after the last channel closed) and refuses a new channel on it.
            try await links.endAll()

            let (json, lines) = try await Self.l2capCommand(["--psm", "128", "--json", "--idle", "3", "--timeout", "40"], input: Array("hello".utf8))
            try #require(json.status == 0, "\(json)")
            try #require(Self.sdus(json: lines) == [Array("hello".utf8)], "\(String(decoding: lines, as: UTF8.self))")
            try await links.endAll()

            let (refused, _) = try await Self.l2capCommand(["--psm", "0x0099", "--timeout", "40"], input: [])
            print("ble l2cap over the kernel, refused PSM: \(refused.output)")
            try #require(refused.status == 1, "\(refused)")
            try #require(refused.output.contains("refused the L2CAP channel to PSM 0x0099 (E"), "\(refused)")
        }
    }

    @Test("ble -d hci-raw:0 l2cap --listen 0x00A3: the kernel accepts the channel HRM opens to it; its SDUs are printed byte-exact with --json and the command exits 0 when HRM closes it")
    func l2capCommandListensOverTheKernel() async throws {
        try await Self.withKernelAdapter(passing: "l2capCommandListensOverTheKernel") { _ in
            let executor = AdapterExecutor(label: "l2cap-command-listen")
            // Once the command listens and holds the link, the test asks HRM, on its
            // call-back server over the same link, to open a channel to 0x00A3 and send its
            // SDUs without expecting them back (third octet 0x01).
            let (waiting, waitingSink) = AsyncStream.makeStream(of: Void.self)
            let command = Task {
                defer { waitingSink.finish() }
                return try await Self.l2capCommand(["--listen", "0x00A3", "--json", "--idle", "60", "--timeout", "60"], input: []) { line, _ in
                    if line.contains("to open a channel to PSM 0x00A3") { waitingSink.yield() }
                }
            }
            guard await KernelTierGuest.first(of: waiting, within: .seconds(60)) != nil else {
                let (run, _) = try await command.value
                throw Unexpected(what: "the command never waited for the channel: \(run)")
            }
            let control = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, psm: Self.callBackPSM, executor: executor, timeout: .seconds(40))
            try await control.send([0xA3, 0x00, 0x01], timeout: .seconds(10))
            let verdict = try #require(try await control.receive(timeout: .seconds(90)), "HRM closed the call-back channel")
            let (run, stdout) = try await command.value
            control.close()
            print("ble l2cap --listen over the kernel: \(run.output)")
            try #require(Array(verdict.prefix(4)) == Array("sent".utf8), "HRM: \(verdict.map { String($0, radix: 16) })")
            try #require(run.status == 0, "\(run)")
            let sdus = try #require(Self.sdus(json: stdout), "not one JSON SDU a line:\n\(String(decoding: stdout, as: UTF8.self))")
            let expected = Self.callBackSizes.enumerated().map { i, size in (0..<size).map { UInt8(truncatingIfNeeded: i + $0) } }
            try #require(sdus.count == expected.count + 16, "\(sdus.count) SDUs: sizes \(sdus.map(\.count))")
            try #require(Array(sdus.prefix(expected.count)) == expected, "first SDUs differ: sizes \(sdus.prefix(expected.count).map(\.count))")
            let bulk = sdus.dropFirst(expected.count).flatMap { $0 }
            try #require(bulk.count == 32 * 1024 && SHA256.hash(bulk) == Array(verdict.dropFirst(4)), "the random octets differ from HRM's (\(bulk.count) octets)")
            try #require(run.output.contains("; the peer closed the channel"), "\(run)")
        }
    }

    /// The SDUs of `ble l2cap --json`'s lines ({"time", "length", "hex"}); nil when a line is
    /// not one, or its length is not its hex's.
    static func sdus(json output: [UInt8]) -> [[UInt8]]? {
        var sdus: [[UInt8]] = []
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                  let hex = object["hex"] as? String, let sdu = bytes(hex: hex), object["length"] as? Int == sdu.count else { return nil }
            sdus.append(sdu)
        }
        return sdus
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }
}
