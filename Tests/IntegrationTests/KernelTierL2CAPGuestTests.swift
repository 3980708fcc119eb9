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

/// Kernel-tier scenarios (inside the VM, see `KernelTierGuestTests`) for the kernel's LE
/// credit-based channels and the HCI monitor channel (BT_SECURITY is in
/// KernelTierSecurityGuestTests.swift). The peer is HRM of Fixtures/peers/vhci_controller.py:
/// an echo server on LE_PSM 0x0080 (MTU 2048, MPS 247) and one on 0x0082 (MTU 8192, MPS 8194).
/// HCI_Reset is opcode 0x0C03 (Vol 4, Part E, 7.3.2); the kernel sends it when it powers an
/// adapter on.
extension KernelTierGuestTests {
    struct Unexpected: Error { var what: String }
    static let echoPSM: UInt16 = 0x0080
    static let bulkEchoPSM: UInt16 = 0x0082

    @Test("Kernel mode: LE credit-based channel to PSM 0x0080 through L2CAPSocketChannel echoes SDUs, 1 MiB with equal SHA-256 and a byte stream; a PSM nobody serves is refused")
    func kernelModeCreditChannelEcho() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        let executor = AdapterExecutor(label: "kernel-mode-psm")
        let links = try LinkWatch()
        do {
            let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, psm: Self.echoPSM, mtu: 4096, executor: executor, timeout: .seconds(40))
            try #require(channel.psm == Self.echoPSM)
            try #require((0x0040...0x007F).contains(channel.localCID), "local CID 0x\(String(channel.localCID, radix: 16))")
            try #require(channel.mtu == 4096 && channel.peerMTU == 2048, "mtu \(channel.mtu) peer \(channel.peerMTU)")
            // Sizes around the peer's MPS (247) and up to its MTU; bytes from a fixed generator.
            var generator = SystemRandomNumberGenerator()
            var sent: [[UInt8]] = []
            for size in [1, 23, 245, 246, 247, 500, 2048, 1000, 7, 2048] {
                sent.append((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
            }
            let outgoing = sent
            let sender = Task {
                for sdu in outgoing { try await channel.send(sdu, timeout: .seconds(20)) }
            }
            var received: [[UInt8]] = []
            while received.count < sent.count, let sdu = try await channel.receive(timeout: .seconds(20)) {
                received.append(sdu)
            }
            try await sender.value
            try #require(received == sent, "echo differs: sizes sent \(sent.map(\.count)), received \(received.map(\.count))")
            // 1 MiB of random data in SDUs of the peer's MTU (8192) through the bulk echo server
            // (a second channel on the same link, opened while the first keeps the link up; MTU
            // 65535 here, since the kernel sizes the credits it grants by its MTU: 42-47 s for
            // 1 MiB with 65535, 66 s with 8192, under software emulation),
            // and 64 KiB through the byte stream, with the functions that run over the host's
            // own channels against Bumble (ChannelEcho, on `ConnectionOrientedChannel`).
            let bulk = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, psm: Self.bulkEchoPSM, mtu: 65535, executor: executor, timeout: .seconds(40))
            try #require(bulk.peerMTU == 8192, "peer MTU \(bulk.peerMTU)")
            let mebibyte = ChannelEcho.random(1 << 20)
            let start = ContinuousClock.now
            let back = try await ChannelEcho.sdus(bulk, mebibyte, sduSize: bulk.peerMTU, timeout: .seconds(60))
            let elapsed = ContinuousClock.now - start
            try #require(back.count == mebibyte.count && SHA256.hash(back) == SHA256.hash(mebibyte), "1 MiB echo differs: \(back.count) bytes back")
            print("kernel mode: 1 MiB echoed through L2CAPSocketChannel in \(elapsed)")
            let stream = ChannelEcho.random(64 * 1024)
            let streamed = try await ChannelEcho.bytes(bulk, stream, chunk: 1000, timeout: .seconds(60))
            try #require(SHA256.hash(streamed) == SHA256.hash(stream), "byte stream echo differs: \(streamed.count) bytes back")
            bulk.close()
            do {
                try await channel.send([UInt8](repeating: 0, count: 2049), timeout: .seconds(5))
                Issue.record("a 2049-byte SDU went to a peer with MTU 2048")
            } catch {
                #expect(error == .sduTooLarge(size: 2049, peerMTU: 2048))
            }
            channel.close()
            #expect(try await channel.receive(timeout: .seconds(5)) == nil)

            do {
                let other = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, psm: 0x0099, executor: executor, timeout: .seconds(40))
                other.close()
                Issue.record("PSM 0x0099 was accepted")
            } catch {
                guard case .channelRefused(_, let psm, _, _) = error else {
                    Issue.record("expected .channelRefused, got \(error)")
                    throw error
                }
                #expect(psm == 0x0099)
                print("kernel mode, refused PSM: \(error)")
            }
            try await links.endAll()
        } catch {
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        try HCIAdapters.bringDown(index: 0)
        KernelTierGuest.pass("kernelModeCreditChannelEcho")
    }

    @Test("HCIMonitor sees hci0 listed, powered up (HCI_Reset and its Command Complete) and closed")
    func monitorSeesAdapterTraffic() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringDown(index: 0) }
        let monitor = try HCIMonitor.open()
        defer { monitor.close() }
        let (added, addedSink) = AsyncStream.makeStream(of: Bool.self)
        let (done, doneSink) = AsyncStream.makeStream(of: Set<String>.self)
        let reader = Task {
            var tags: Set<String> = []
            for await event in monitor.events {
                switch event {
                case .adapterAdded(0, let address, _, let bus) where address == KernelTierGuest.adapterAddress && bus == "Virtual":
                    addedSink.yield(true)
                case .packet(0, .sent, .command(let c), _) where c.opcode.rawValue == 0x0C03:
                    tags.insert("reset")
                case .packet(0, .received, .event(let e), _) where e.code == 0x0E && e.parameters.count >= 3 && e.parameters[1] == 0x03 && e.parameters[2] == 0x0C:
                    tags.insert("reset complete")
                case .adapterOpened(0):
                    tags.insert("opened")
                case .adapterClosed(0):
                    tags.insert("closed")
                default:
                    break
                }
                if tags.contains("closed") { break }
            }
            doneSink.yield(tags)
        }
        defer { reader.cancel() }
        try #require(await KernelTierGuest.first(of: added, within: .seconds(10)) != nil, "no new-index record for hci0")
        try HCIAdapters.bringUp(index: 0)
        try HCIAdapters.bringDown(index: 0)
        let tags = try #require(await KernelTierGuest.first(of: done, within: .seconds(15)), "no close-index record for hci0 within 15 s")
        try #require(tags == ["opened", "reset", "reset complete", "closed"], "seen: \(tags)")
        KernelTierGuest.pass("monitorSeesAdapterTraffic")
    }

    @Test("ble monitor --json --btsnoop: hci0 powered up while it runs shows as decoded lines and in the capture")
    func monitorCommand() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringDown(index: 0) }
        let capture = "/tmp/monitor-\(getpid()).btsnoop"
        let powered = Mutex<Result<Void, any Error>?>(nil)
        // The first line is hci0's new-index record, replayed when the monitor opens: from
        // then on traffic is seen, so hci0 is powered up (HCIDEVUP: HCI_Reset and more).
        let run = try await KernelTierGuest.runProgram(
            [BLETool.executable.path, "monitor", "--json", "-i", "hci0", "--count", "6", "--btsnoop", capture]
        ) { line, _ in
            guard line.contains("\"adapterEvent\":\"added\"") else { return }
            let result = Result { try HCIAdapters.bringUp(index: 0) }
            powered.withLock { $0 = result }
        }
        try? HCIAdapters.bringDown(index: 0)
        try #require(run.status == 0, "\(run)")
        let outcome = powered.withLock { $0 }
        try #require(outcome, "the monitor printed no new-index line, so hci0 was never powered up:\n\(run.output)").get()
        let lines = run.output.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard let data = line.data(using: .utf8) else { return nil }
            return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        }
        let reset = lines.first { $0["type"] as? String == "CMD" && $0["opcode"] as? Int == 0x0C03 }
        try #require(reset?["adapter"] as? Int == 0, "no HCI_Reset line for hci0:\n\(run.output)")
        try #require(lines.filter { $0["type"] != nil }.count == 6, "\(run.output)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: capture)))
        let reader = try BTSnoopReader(bytes: bytes)
        try #require(reader.records.count == 6, "capture holds \(reader.records.count) records")
        try #require(reader.records.contains { if case .command(let c) = $0.packet { return c.opcode.rawValue == 0x0C03 } else { return false } })
        KernelTierGuest.pass("monitorCommand")
    }
}

/// hci0's LE links as the monitor channel shows them, so a test can end them all before it
/// powers the adapter down: HCIDEVDOWN with a link up would leave the peer believing it is
/// still connected, and not advertising, for the next test.
final class LinkWatch: Sendable {
    private let monitor: HCIMonitor
    private final class Handles: Sendable { let set = Mutex(Set<UInt16>()) }
    private let open = Handles()
    /// The number of open links after each change.
    private let changes: AsyncStream<Int>
    private let reader: Task<Void, Never>

    init() throws {
        let monitor = try HCIMonitor.open()
        self.monitor = monitor
        let (changes, sink) = AsyncStream.makeStream(of: Int.self)
        self.changes = changes
        let open = self.open
        reader = Task {
            for await event in monitor.events {
                guard case .packet(0, .received, .event(let e), _) = event, let decoded = try? HCIEvent(e) else { continue }
                switch decoded {
                case .leConnectionComplete(let c) where c.status == .success:
                    sink.yield(open.set.withLock { $0.insert(c.handle); return $0.count })
                case .leEnhancedConnectionComplete(let c) where c.status == .success:
                    sink.yield(open.set.withLock { $0.insert(c.handle); return $0.count })
                case .disconnectionComplete(let d):
                    sink.yield(open.set.withLock { $0.remove(d.handle); return $0.count })
                default:
                    break
                }
            }
        }
    }

    deinit {
        reader.cancel()
        monitor.close()
    }

    /// Ends every open link with HCI_Disconnect (Remote User Terminated Connection) through a
    /// raw-channel HCI socket, as another program could, and waits for their Disconnection
    /// Complete. The kernel keeps an LE link up long after a refused channel on it, so the
    /// tests do not rely on its idle timer.
    func endAll(within limit: Duration = .seconds(15)) async throws {
        let handles = open.set.withLock { $0 }
        guard !handles.isEmpty else { return }
        let host = HCIHost(transport: try HCISocketTransport(index: 0, channel: .raw), executor: AdapterExecutor(label: "link-watch"))
        try await host.start()
        do {
            for handle in handles {
                _ = try await host.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
            }
        } catch {
            await host.close()
            throw error
        }
        await host.close()
        let open = self.open
        let ended = await KernelTierGuest.first(of: changes.filter { _ in open.set.withLock { $0.isEmpty } }, within: limit) != nil
        try #require(ended || open.set.withLock { $0.isEmpty }, "links \(open.set.withLock { $0 }) still open \(limit) after HCI_Disconnect")
    }
}
