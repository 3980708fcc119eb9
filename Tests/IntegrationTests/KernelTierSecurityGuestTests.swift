import ATT
import BLECore
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif
import BLEWire
import BLETransport

/// Kernel-tier scenario (inside the VM, see `KernelTierGuestTests`) for BT_SECURITY on the
/// kernel's L2CAP sockets. The peer is HRM of Fixtures/peers/vhci_controller.py: its
/// characteristic B1E5E000-5EC0-4E00-8000-000000000002 reads "secret" only on an encrypted link
/// (else Insufficient Encryption, ATT error 0x0F, Vol 3, Part F, 3.4.1.1); it pairs as Bumble
/// does by default: no input, no output, bonding, Secure Connections when asked.
///
/// Expected bytes (Core Specification): SMP runs on fixed CID 0x0006 (Vol 3, Part A, 2.1);
/// Pairing Request 0x01 and Pairing Response 0x02 carry IO Capability (0x03 NoInputNoOutput),
/// OOB flag, AuthReq (Bonding_Flags 0b01 in bits 0-1, MITM bit 2, SC bit 3), key size and key
/// distributions (Vol 3, Part H, 3.5.1-3.5.2); NoInputNoOutput on both sides is Just Works
/// (Part H, 2.3.5.1, Table 2.8); Pairing Public Key 0x0C and DHKey Check 0x0D are LE Secure
/// Connections only (3.5.6-3.5.7); Pairing Failed 0x05 with reason 0x03 Authentication
/// Requirements (3.5.5). HCI_LE_Enable_Encryption is opcode 0x2019 (Vol 4, Part E, 7.8.24);
/// Encryption Change is event 0x08 (v2: 0x59) with Status, Connection_Handle, Encryption_Enabled
/// (7.7.8, 7.7.8.2).
extension KernelTierGuestTests {
    static let secret = BluetoothUUID("B1E5E000-5EC0-4E00-8000-000000000002")!

    @Test("Kernel mode security: without SMP, BT_SECURITY is a typed error and the encrypted characteristic is refused; with LE and Secure Connections enabled through the management interface, BT_SECURITY medium pairs Just Works with Secure Connections and reads \"secret\"; high is not reached against a peer without input or output; ble l2cap --security encrypted makes the kernel pair for its socket (l2capCommandEncryptedOverTheKernel); then bonding across processes and high with Passkey Entry (kernelModeBonding)")
    func kernelModeSecurity() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        let executor = AdapterExecutor(label: "kernel-mode-security")
        let scheduler = DispatchTimerScheduler(queue: executor.queue)
        let byUUID = ATTPDU.readByTypeRequest(range: ATTHandleRange(start: 0x0001, end: 0xFFFF), type: Self.secret)
        let links = try LinkWatch()
        do {
            // Without bluetoothd nothing enabled LE in the kernel's management interface, and
            // the kernel skips LE pairing: asking for .encrypted fails instead of going on
            // (the socket is closed before the error is thrown).
            let unpaired = try await Self.refusal(KernelTierGuest.hrm, .encrypted, executor: executor, timeout: .seconds(40))
            guard case .securityNotReached(_, .encrypted, let reached) = unpaired else { throw unpaired }
            try #require(reached == SecurityLevel.none, "\(unpaired)")
            print("kernel mode, BT_SECURITY without SMP: \(unpaired)")
            let plain = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, executor: executor, timeout: .seconds(40))
            do {
                let answer = try await ATTBearer(channel: plain, scheduler: scheduler).request(byUUID)
                plain.close()
                throw Unexpected(what: "read of the encrypted characteristic on a plain link: \(answer)")
            } catch let error as ATTError {
                guard case .errorResponse(let code, _, _) = error else { throw error }
                try #require(code == ATTErrorCode(0x0F), "error \(code)")
            }
            #expect(plain.securityLevel == SecurityLevel.none)
            plain.close()
            try await links.endAll()
        } catch {
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        try HCIAdapters.bringDown(index: 0)
        KernelTierGuest.pass("kernelModeSecurity")

        // With SMP: LE and Secure Connections enabled while hci0 is down, as bluetoothd
        // does; the kernel registers its SMP channel (cmac(aes) and ECDH contexts) when it
        // powers hci0 on.
        try HCIAdapters.enableLowEnergy(index: 0)
        try HCIAdapters.enableSecureConnections(index: 0)
        let log = try MonitorLog()
        // The kernel asks user space to confirm Just Works; without bluetoothd this answers.
        let agent = try KernelPairingAgent(index: 0)
        defer { agent.close() }
        try HCIAdapters.bringUp(index: 0)
        do {
            let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, security: .encrypted, executor: executor, timeout: .seconds(60))
            try #require(channel.securityLevel == .encrypted, "BT_SECURITY reads \(channel.securityLevel.map { "\($0)" } ?? "?")")
            let bearer = ATTBearer(channel: channel, scheduler: scheduler)
            let secret = Array("secret".utf8)
            guard case .readByTypeResponse(let entries) = try await bearer.request(byUUID) else {
                throw Unexpected(what: "Read By Type got no Read By Type Response")
            }
            let entry = try #require(entries.first, "Read By Type Response without entries")
            try #require(entries.count == 1 && entry.value == secret, "\(entries)")
            guard case .readResponse(let value) = try await bearer.request(.readRequest(handle: entry.handle)) else {
                throw Unexpected(what: "Read Request got no Read Response")
            }
            try #require(value == secret, "read \(value)")
            try #require(agent.questions == [.justWorks(peer: KernelTierGuest.hrm)], "questions to the agent: \(agent.questions)")
            channel.close()

            // What went over hci0: Just Works with Secure Connections, then encryption.
            let sent = log.smp(.sent), received = log.smp(.received)
            let request = try #require(sent.first { $0.first == 0x01 }, "no Pairing Request sent: \(sent)")
            let response = try #require(received.first { $0.first == 0x02 }, "no Pairing Response received: \(received)")
            try #require(request.count == 7 && response.count == 7, "request \(request), response \(response)")
            try #require(request[1] == 0x03 && response[1] == 0x03, "IO capabilities \(request[1]), \(response[1]): not Just Works")
            try #require(request[3] & 0x08 != 0 && response[3] & 0x08 != 0, "AuthReq 0x\(String(request[3], radix: 16)) / 0x\(String(response[3], radix: 16)): the SC bit expected on both")
            for code: UInt8 in [0x0C, 0x0D] {
                try #require(sent.contains { $0.first == code } && received.contains { $0.first == code }, "SMP code 0x0\(String(code, radix: 16)) not exchanged: sent \(sent.map { $0.first ?? 0 }), received \(received.map { $0.first ?? 0 })")
            }
            try #require(log.contains(.sent) { if case .command(let c) = $0 { c.opcode.rawValue == 0x2019 } else { false } }, "no HCI_LE_Enable_Encryption sent")
            let encrypted = await log.wait(within: .seconds(10)) { entries in
                entries.contains { entry in
                    guard entry.direction == .received, case .event(let e) = entry.packet, e.code == 0x08 || e.code == 0x59 else { return false }
                    return e.parameters.count >= 4 && e.parameters[0] == 0x00 && e.parameters[3] == 0x01
                }
            }
            try #require(encrypted, "no Encryption Change with status 0x00 and Encryption_Enabled 0x01")
            try await links.endAll()
            print("kernel mode, BT_SECURITY medium: paired (Pairing Request \(hex(request)), Response \(hex(response))), read \"secret\"")

            // High needs MITM protection, which no input and no output on both sides cannot
            // give: the kernel pairs again asking for MITM, gets Just Works and ends the
            // pairing itself (Authentication Requirements). The link stays up and plain; the
            // Pairing Failed the kernel sent ends the wait with the typed error.
            let high = try await Self.refusal(KernelTierGuest.hrm, .authenticated, executor: executor, timeout: .seconds(30))
            print("kernel mode, BT_SECURITY high: \(high)")
            guard case .securityFailed(_, .authenticated, .pairingFailed(let reason, let byPeer)?, _) = high else { throw high }
            try #require(reason == .authenticationRequirements && !byPeer, "\(high)")
            let requests = log.smp(.sent).filter { $0.first == 0x01 }
            try #require(requests.count >= 2 && requests.dropFirst().allSatisfy { $0.count == 7 && $0[3] & 0x04 != 0 }, "the Pairing Requests for high should ask for MITM: \(requests.map(hex))")
            let failed = log.smp(.sent).filter { $0.first == 0x05 }
            try #require(failed.contains([0x05, 0x03]), "no Pairing Failed (Authentication Requirements) from the kernel: \(failed.map(hex))")
            try #require(agent.questions.count == 1, "the kernel asked about a pairing it refused: \(agent.questions)")
            try await links.endAll()
        } catch {
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        try HCIAdapters.bringDown(index: 0)
        KernelTierGuest.pass("kernelModeEncryptedRead")
        // The same set-up for the CLI: LE and Secure Connections stay enabled, the agent answers.
        try await Self.l2capCommandEncryptedOverTheKernel(agent: agent)
        agent.close()
        try await Self.kernelModeBonding()
    }
}

extension KernelTierGuestTests {
    /// Connects to `peer` asking for `level` and returns the typed error the connection must
    /// end with; a channel that comes up fails the test.
    static func refusal(_ peer: LEAddress, _ level: SecurityLevel, executor: AdapterExecutor, timeout: Duration) async throws -> L2CAPSocketError {
        do {
            let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: peer, security: level, executor: executor, timeout: timeout)
            channel.close()
            throw Unexpected(what: "the kernel reached \(channel.securityLevel.map { "\($0)" } ?? "?") with \(peer), asked for \(level)")
        } catch let error as L2CAPSocketError {
            return error
        }
    }
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
}

/// Every HCI packet of hci0 as the monitor channel shows it, kept so a test can look back at
/// what went over the adapter, and wait (bounded) for what has not arrived yet.
final class MonitorLog: Sendable {
    struct Entry: Sendable {
        var direction: PacketDirection
        var packet: HCIPacket
    }

    private final class Store: Sendable { let entries = Mutex<[Entry]>([]) }
    private let monitor: HCIMonitor
    private let store = Store()
    private let arrivals: AsyncStream<Void>
    private let reader: Task<Void, Never>

    init() throws {
        let monitor = try HCIMonitor.open()
        self.monitor = monitor
        let (arrivals, sink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.arrivals = arrivals
        let store = self.store
        reader = Task {
            for await event in monitor.events {
                guard case .packet(0, let direction, let packet, _) = event else { continue }
                store.entries.withLock { $0.append(Entry(direction: direction, packet: packet)) }
                sink.yield()
            }
        }
    }

    deinit {
        reader.cancel()
        monitor.close()
    }

    /// True when a packet that went `direction` matches.
    func contains(_ direction: PacketDirection, where match: (HCIPacket) -> Bool) -> Bool {
        store.entries.withLock { $0.contains { $0.direction == direction && match($0.packet) } }
    }

    /// The HCI commands that went `direction`, in order.
    func commands(_ direction: PacketDirection) -> [HCICommandPacket] {
        store.entries.withLock { entries in
            entries.compactMap { entry in
                guard entry.direction == direction, case .command(let c) = entry.packet else { return nil }
                return c
            }
        }
    }

    /// The SMP PDUs (code first) that went `direction`, in order: the L2CAP payload of each
    /// first ACL fragment on CID 0x0006 (the rest of a longer PDU is not needed here).
    func smp(_ direction: PacketDirection) -> [[UInt8]] {
        store.entries.withLock { entries in
            entries.compactMap { entry -> [UInt8]? in
                guard entry.direction == direction, case .acl(let acl) = entry.packet, acl.boundary != .continuing,
                      acl.data.count > 4, acl.data[2] == 0x06, acl.data[3] == 0x00 else { return nil }
                return Array(acl.data[4...])
            }
        }
    }

    /// Waits at most `limit` until `match` holds for the packets logged so far.
    func wait(within limit: Duration, until match: @escaping @Sendable ([Entry]) -> Bool) async -> Bool {
        let store = self.store
        if match(store.entries.withLock { $0 }) { return true }
        return await KernelTierGuest.first(of: arrivals.filter { _ in match(store.entries.withLock { $0 }) }, within: limit) != nil
    }
}
