import BLECore
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif
import BLETransport

/// Kernel-tier scenarios (inside the VM, see `KernelTierGuestTests`) for the built `ble`
/// binary's `l2cap` command on a kernel-owned adapter (`-d hci-raw:0`: the kernel's L2CAP
/// sockets carry the channel). The peer is HRM of Fixtures/peers/vhci_controller.py: its echo
/// server on LE_PSM 0x0080 (MTU 2048, MPS 247) and its call-back server on 0x0083; it pairs
/// Just Works (no input, no output) with Secure Connections. `--security encrypted` runs
/// twice: before LE was ever enabled through the management interface (the kernel has no LE
/// SMP channel and does not pair) and from `kernelModeSecurity`, which enables it.
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

    @Test("ble -d hci-raw:0 l2cap --psm 0x0080: 64 KiB through the kernel's socket to HRM's echo server come back byte-exact at security level not encrypted, --json prints the SDU, a refused PSM exits 1 with the errno, --security encrypted without the kernel's LE SMP exits 1 saying what bluetoothd would set up")
    func l2capCommandOverTheKernel() async throws {
        try await Self.withKernelAdapter(passing: "l2capCommandOverTheKernel") { links in
            let data = ChannelEcho.random(64 * 1024)
            let (run, echoed) = try await Self.l2capCommand(["--psm", "0x0080", "--idle", "4", "--timeout", "40"], input: data)
            print("ble l2cap over the kernel: \(run.output)")
            try #require(run.status == 0, "\(run)")
            try #require(echoed.count == data.count && SHA256.hash(echoed) == SHA256.hash(data), "\(echoed.count) bytes back\n\(run)")
            try #require(echoed == data)
            try #require(run.output.contains("channel open through the kernel on hci0: PSM 0x0080"), "\(run)")
            try #require(run.output.contains("\nsecurity level (BT_SECURITY): not encrypted\n"), "\(run)")
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
            try await links.endAll()

            // LE was never enabled through the management interface (no bluetoothd; the
            // security scenarios, which enable it for good, run later): the kernel has no LE
            // SMP channel, does not pair, and the command says what is missing.
            let refusedAt = ContinuousClock.now
            let (plain, nothing) = try await Self.l2capCommand(["--psm", "0x0080", "--security", "encrypted", "--timeout", "40"], input: Array("hello".utf8))
            print("ble l2cap over the kernel, --security encrypted without SMP (\(ContinuousClock.now - refusedAt)): \(plain.output)")
            try #require(plain.status == 1 && nothing.isEmpty, "\(plain)")
            try #require(plain.output.hasSuffix("ble: \(Self.securityNotReachedLine)\n"), "\(plain)")
            try #require(!plain.output.contains("channel open"), "\(plain)")
        }
    }

    /// What `ble -d hci-raw:0 l2cap HRM --security encrypted` prints when the kernel did not
    /// pair (`L2CAPKernel.failure`, `.securityNotReached` at level none).
    static let securityNotReachedLine = "the link to \(KernelTierGuest.hrm) stayed at security level 'not encrypted' while --security asked for 'encrypted': with -d hci-raw:0 the kernel pairs, on LE only if LE was enabled through its management interface before hci0 was powered on and an agent confirms the pairing, as bluetoothd does; start bluetoothd, or let this program pair with -d hci0 and the adapter down ('ble adapters --down hci0')"

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

    /// `ble -d hci-raw:0 l2cap HRM --psm 0x0080 --security encrypted`, called by
    /// `kernelModeSecurity` once it has enabled LE and Secure Connections through the
    /// management interface, with `agent` answering the kernel's questions: the command's
    /// socket makes the kernel pair (Just Works, LE Secure Connections), the echo comes back
    /// byte-exact and the command prints the level the socket reached.
    static func l2capCommandEncryptedOverTheKernel(agent: KernelPairingAgent) async throws {
        let asked = agent.questions.count
        let log = try MonitorLog()
        let start = ContinuousClock.now
        try await Self.withKernelAdapter(passing: "l2capCommandEncryptedOverTheKernel") { _ in
            // The kernel, though not bondable, keeps the key of kernelModeEncryptedRead's
            // pairing and would encrypt this link with it; without the key, the command's
            // socket makes the kernel pair.
            let removed = try HCIAdapters.removeBond(index: 0, peer: KernelTierGuest.hrm)
            let data = ChannelEcho.random(4096)
            let (run, echoed) = try await Self.l2capCommand(["--psm", "0x0080", "--security", "encrypted", "--idle", "3", "--timeout", "60"], input: data)
            print("ble l2cap over the kernel, --security encrypted (the kernel's key for HRM removed first: \(removed)): \(run.output)")
            try #require(run.status == 0, "\(run)")
            try #require(echoed == data, "\(echoed.count) of \(data.count) bytes back, not the same\n\(run)")
            try #require(run.output.contains("\nsecurity level (BT_SECURITY): encrypted\n"), "\(run)")
            // Two reads of the file, each one SDU of the echo server's MTU (2048), each echoed as one.
            try #require(run.output.contains("sent 4096 bytes in 2 SDUs, received 4096 bytes in 2 SDUs in "), "\(run)")
            // The kernel paired for the command's socket: it asked the agent to confirm Just
            // Works, and the Pairing Request and Response (NoInputNoOutput, SC bit) went over hci0.
            try #require(Array(agent.questions.dropFirst(asked)) == [.justWorks(peer: KernelTierGuest.hrm)], "questions to the agent: \(agent.questions)")
            let request = try #require(log.smp(.sent).first { $0.first == 0x01 }, "no Pairing Request sent: \(log.smp(.sent).map(hex))")
            let response = try #require(log.smp(.received).first { $0.first == 0x02 }, "no Pairing Response received: \(log.smp(.received).map(hex))")
            try #require(request.count == 7 && response.count == 7 && request[1] == 0x03 && response[1] == 0x03 && request[3] & 0x08 != 0 && response[3] & 0x08 != 0,
                         "Just Works with Secure Connections expected: request \(hex(request)), response \(hex(response))")
        }
        print("l2capCommandEncryptedOverTheKernel: \(ContinuousClock.now - start), hci0 powered on and off included")
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
