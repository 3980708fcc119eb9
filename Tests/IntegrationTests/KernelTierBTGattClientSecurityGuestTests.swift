import BLETransport
import BLEWire
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Pairing through the kernel's Security Manager, driven by BlueZ's btgatt-client against
/// `ble serve Fixtures/gatt/serve-secure.yaml --io display-only` (inside the VM, after
/// `btgattClientAgainstServe`, see `KernelTierBTGattClientGuestTests`).
///
/// What the kernel does without bluetoothd (Linux net/bluetooth/smp.c, mgmt.c): it registers
/// its SMP channel only when LE was enabled through the management interface (MGMT_OP_SET_LE,
/// `HCIAdapters.enableLowEnergy`) before the adapter powered on; without it an LE link has no
/// SMP and a Security Request is dropped. With it, BT_SECURITY medium on the ATT socket makes
/// the kernel send a Pairing Request with its IO capability (MGMT_OP_SET_IO_CAPABILITY,
/// NoInputNoOutput unless set), and it asks user space to confirm Just Works (User
/// Confirmation Request) and to type a passkey (User Passkey Request): `KernelPairingAgent`
/// answers in place of bluetoothd's agent. btgatt-client sets BT_SECURITY from `-s` before it
/// connects, and BlueZ's ATT code raises it to medium by itself after an Insufficient
/// Encryption error (src/shared/att.c, change_security).
///
/// Expected values (Core Specification 5.4): Insufficient Encryption is ATT error 0x0F (Vol 3,
/// Part F, 3.4.1.1); Security Request is SMP code 0x0B with AuthReq Bonding_Flags 0b01 and SC
/// bit 3 and no MITM bit for an encryption-only permission (Vol 3, Part H, 3.6.7, 3.5.1);
/// NoInputNoOutput (0x03) against DisplayOnly (0x00) is Just Works, KeyboardDisplay (0x04)
/// against DisplayOnly is Passkey Entry with the initiator typing (2.3.5.1, Table 2.8);
/// Encryption Change is event 0x08 (Vol 4, Part E, 7.7.8). btgatt-client's lines from BlueZ
/// tools/btgatt-client.c ("Read value (%u bytes): " then "%02x " per octet; "Read request
/// failed: %s (0x%02x)"); `ble serve`'s from docs/cli.md.
extension KernelTierBTGattClientGuestTests {
    static let encrypted = "12345678-1234-5678-1234-56789abcdef4"
    static let authenticated = "12345678-1234-5678-1234-56789abcdef5"
    static let serveAddress = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_02), type: .public)

    /// The three scenes on one `ble serve`: no SMP in the kernel (refused, Security Request
    /// dropped), BT_SECURITY medium (Just Works, bonded), BT_SECURITY high (Passkey Entry).
    static func securityScenes(client: String) async throws {
        let bonds = "/tmp/ble-kernel-bonds-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: bonds) }
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment.removeValue(forKey: "BLE_LOG")
        let serveEnvironment = environment
        let serveFeed = try Feed("serve-secure")
        let served = KernelTierServeGuestTests.ServeLines()
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        let serve = Task {
            defer { served.finish() }
            return try await KernelTierGuest.runProgram(
                [BLETool.executable.path, "-d", "hci1", "--bond-dir", bonds, "serve", BLETool.fixture("gatt/serve-secure.yaml").path,
                 "--name", "ksecure", "--io", "display-only"],
                environment: serveEnvironment, stdin: serveFeed.path) { line, pid in served.add(line, from: pid) }
        }
        do {
            try #require(await served.next { $0.hasPrefix("serving 2 services from ") } != nil, "ble serve did not start advertising: \(served.all)")
            try await refusedWithoutSMP(client: client, served: served)
            try HCIAdapters.bringDown(index: 0)
            KernelTierGuest.pass("btgattClientRefusedWithoutKernelSMP")

            // LE and Secure Connections through the management interface while hci0 is down,
            // as bluetoothd does: the kernel then has its SMP channel when hci0 powers on.
            // Bondable too, so that the kernel sets Bonding_Flags and `ble serve` keeps a bond.
            try HCIAdapters.enableLowEnergy(index: 0)
            try HCIAdapters.enableSecureConnections(index: 0)
            try HCIAdapters.enableBonding(index: 0)
            try await pairsJustWorks(client: client, served: served, bonds: bonds)
            KernelTierGuest.pass("btgattClientPairsMediumThroughKernelSMP")
            try await pairsWithPasskey(client: client, served: served)
            KernelTierGuest.pass("btgattClientPairsHighThroughKernelSMP")
        } catch {
            if let pid = served.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
            _ = try? await serve.value
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        if let pid = served.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
        let run = try await serve.value
        print("ble serve (serve-secure.yaml) against btgatt-client:\n\(run.output)")
        try #require(run.status == 0, "\(run)")
    }

    /// btgatt-client without `-s`, the kernel without SMP: the encrypted characteristic is
    /// refused with Insufficient Encryption, `ble serve` sends a Security Request, which the
    /// kernel's adapter receives and nobody answers.
    static func refusedWithoutSMP(client: String, served: KernelTierServeGuestTests.ServeLines) async throws {
        let log = try MonitorLog()
        try await withClient(client, security: nil, served: served) { printed, feed in
            let handle = try await listedHandle(of: encrypted, printed)
            try feed.send("read-value \(handle)")
            let failed = await printed.next { $0.hasPrefix("Read request failed") || $0.hasPrefix("Read value") }
            try #require(failed == "Read request failed: Insufficient Encryption (0x0f)", "\(printed.all)")
            let requested = await log.wait(within: .seconds(10)) { _ in log.smp(.received).contains { $0.first == 0x0B } }
            try #require(requested, "no Security Request reached hci0: SMP received \(log.smp(.received).map(hex))")
            try #require(log.smp(.received).filter { $0.first == 0x0B }.allSatisfy { $0 == [0x0B, 0x09] }, "Security Requests \(log.smp(.received).map(hex))")
            try #require(log.smp(.sent).isEmpty, "the kernel answered on SMP without an SMP channel: \(log.smp(.sent).map(hex))")
            try #require(!served.all.contains { $0.hasPrefix("paired ") || $0.hasPrefix("read \(kernelAddress) 12345678-1234-5678-1234-56789ABCDEF4") }, "\(served.all)")
        }
    }

    /// btgatt-client `-s medium`, the kernel NoInputNoOutput with an agent: Just Works with
    /// Secure Connections before the first ATT request, the read succeeds, `ble serve` prints
    /// the pairing and writes the bond file.
    static func pairsJustWorks(client: String, served: KernelTierServeGuestTests.ServeLines, bonds: String) async throws {
        let agent = try KernelPairingAgent(index: 0)
        defer { agent.close() }
        try HCIAdapters.bringUp(index: 0)
        let log = try MonitorLog()
        try await withClient(client, security: "medium", served: served) { printed, feed in
            let paired = await served.next { $0.hasPrefix("paired ") || $0.hasPrefix("pairing failed ") }
            try #require(paired == "paired \(kernelAddress) encrypted, Secure Connections, bonded", "\(served.all)")
            let handle = try await listedHandle(of: encrypted, printed)
            try feed.send("read-value \(handle)")
            let read = await printed.next { $0.hasPrefix("Read request failed") || $0.hasPrefix("Read value") }
            try #require(read == "Read value (6 bytes): 73 65 63 72 65 74 ", "\(printed.all)")
            try #require(agent.questions == [.justWorks(peer: serveAddress)], "questions to the agent: \(agent.questions)")
            let request = try #require(log.smp(.sent).first { $0.first == 0x01 }, "no Pairing Request from the kernel: \(log.smp(.sent).map(hex))")
            let response = try #require(log.smp(.received).first { $0.first == 0x02 }, "no Pairing Response: \(log.smp(.received).map(hex))")
            try #require(request.count == 7 && request[1] == 0x03 && request[3] & 0x0D == 0x09, "Pairing Request \(hex(request))")
            try #require(response.count == 7 && response[1] == 0x00 && response[3] & 0x08 != 0, "Pairing Response \(hex(response))")
            let changed = await encryptionChanged(log)
            try #require(changed, "no Encryption Change with status 0x00 and Encryption_Enabled 0x01 on hci0")
        }
        try HCIAdapters.bringDown(index: 0)
        let files = FileManager.default.enumerator(atPath: bonds)?.compactMap { $0 as? String } ?? []
        let file = try #require(files.first { $0.hasSuffix("\(kernelAddress)-public") }, "no bond file for \(kernelAddress) under \(bonds): \(files)")
        let text = try String(contentsOfFile: bonds + "/" + file, encoding: .utf8)
        try #require(text.split(separator: "\n").contains { $0.hasPrefix("ltk=") }, "the bond file has no long-term key:\n\(text)")
    }

    /// btgatt-client `-s high`, the kernel KeyboardDisplay: Passkey Entry, the agent types
    /// the passkey `ble serve` prints, and the authenticated characteristic reads.
    static func pairsWithPasskey(client: String, served: KernelTierServeGuestTests.ServeLines) async throws {
        let shown = Mutex<UInt32?>(nil)
        let agent = try KernelPairingAgent(index: 0, ioCapability: .keyboardDisplay) { question in
            guard case .passkey = question else { return .confirm }
            guard let line = await served.next(within: .seconds(30), { $0.hasPrefix("passkey ") }), let passkey = UInt32(line.dropFirst("passkey ".count)) else {
                return .refuse
            }
            shown.withLock { $0 = passkey }
            return .passkey(passkey)
        }
        defer { agent.close() }
        try HCIAdapters.bringUp(index: 0)
        try await withClient(client, security: "high", served: served) { printed, feed in
            let paired = await served.next { $0.hasPrefix("paired ") || $0.hasPrefix("pairing failed ") }
            try #require(paired == "paired \(kernelAddress) encrypted, authenticated, Secure Connections, bonded", "\(served.all)")
            try #require(shown.withLock { $0 } != nil && agent.questions == [.passkey(peer: serveAddress)], "questions to the agent: \(agent.questions)")
            let handle = try await listedHandle(of: authenticated, printed)
            try feed.send("read-value \(handle)")
            let read = await printed.next { $0.hasPrefix("Read request failed") || $0.hasPrefix("Read value") }
            try #require(read == "Read value (4 bytes): 6d 69 74 6d ", "\(printed.all)")
        }
        try HCIAdapters.bringDown(index: 0)
    }

    /// Runs btgatt-client on hci0 against `ble serve` (with `-s security`), waits for its
    /// discovery, runs `body`, ends it and the link.
    static func withClient(_ client: String, security: String?, served: KernelTierServeGuestTests.ServeLines,
                           _ body: (KernelTierServeGuestTests.ServeLines, Feed) async throws -> Void) async throws {
        let feed = try Feed("btgatt-secure")
        let links = try LinkWatch()
        let printed = KernelTierServeGuestTests.ServeLines()
        let arguments = ["/usr/bin/stdbuf", "-oL", client, "-i", "hci0", "-d", "C0:00:00:00:00:02", "-t", "public"] + (security.map { ["-s", $0] } ?? [])
        let btgatt = Task {
            defer { printed.finish() }
            return try await KernelTierGuest.runProgram(arguments, stdin: feed.path) { line, pid in printed.add(Self.plain(line), from: pid) }
        }
        do {
            try #require(await printed.next { $0 == "GATT discovery procedures complete" } != nil, "btgatt-client did not finish discovery: \(printed.all)")
            try await body(printed, feed)
        } catch {
            if let pid = printed.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
            print("btgatt-client \(security.map { "-s \($0)" } ?? "") :\n\((try? await btgatt.value)?.output ?? "")")
            try? await links.endAll()
            throw error
        }
        if let pid = printed.pid.withLock({ $0 }) { kill(pid, SIGTERM) }
        let run = try await btgatt.value
        print("btgatt-client \(security.map { "-s \($0)" } ?? "(no -s)") against ble serve:\n\(run.output)")
        try await links.endAll()
        try #require(await served.next { $0 == "disconnected \(kernelAddress)" } != nil, "ble serve did not report the link's end: \(served.all)")
    }

    /// The value handle btgatt-client lists for `uuid` (its service list follows the
    /// "GATT discovery procedures complete" line).
    static func listedHandle(of uuid: String, _ printed: KernelTierServeGuestTests.ServeLines) async throws -> String {
        if valueHandle(of: uuid, in: printed.all) == nil { _ = await printed.next { _ in valueHandle(of: uuid, in: printed.all) != nil } }
        return try #require(valueHandle(of: uuid, in: printed.all), "btgatt-client did not list \(uuid): \(printed.all)")
    }

    /// An Encryption Change (v1 0x08 or v2 0x59) with status 0x00 and Encryption_Enabled 0x01.
    static func encryptionChanged(_ log: MonitorLog) async -> Bool {
        await log.wait(within: .seconds(10)) { entries in
            entries.contains { entry in
                guard entry.direction == .received, case .event(let e) = entry.packet, e.code == 0x08 || e.code == 0x59 else { return false }
                return e.parameters.count >= 4 && e.parameters[0] == 0x00 && e.parameters[3] == 0x01
            }
        }
    }
}
