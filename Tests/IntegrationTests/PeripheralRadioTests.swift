import Foundation
import Testing
import BLECore
import BLETestSupport
import BLEWire
import GATTClient

/// The stack as the peripheral, with Bumble as the independent central
/// (Fixtures/peers/central_peer.py): a Bumble Device on a second virtual controller of the
/// same link scans with extended scanning and connects to our advertisement.
///
/// Bumble's controller (0.0.236) has the LE Extended Advertising feature but leaves the
/// extended commands out of its Supported Commands, so the stack drives it with the legacy
/// commands; its legacy advertiser only ever sends ADV_IND (a non-connectable legacy set is not
/// sent at all). With the extended commands listed (`--extended-commands`, a fix in the test
/// peer) it sends every set as one ADV_EXT_IND with the whole data, also past 31 octets,
/// ignores the set's duration, and follows LE Connection Complete (Role 0x01) with Advertising
/// Set Terminated.
@Suite("Peripheral role on the virtual radio", .timeLimit(.minutes(2)))
struct PeripheralRadioTests {
    static let hostAddress = "00:1B:DC:0F:00:09"

    /// The Bumble central process and its JSON lines.
    final class BumbleCentral: Sendable {
        let process: ChildProcess
        let lines: AsyncStream<String>
        let port: Int

        init(connect: Bool, extendedCommands: Bool = false) async throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let python = ProcessInfo.processInfo.environment["BLE_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
                ?? root.appendingPathComponent(".venv/bin/python").path
            let script = root.appendingPathComponent("Fixtures/peers/central_peer.py").path
            var arguments = [script, "--host-address", PeripheralRadioTests.hostAddress]
            if connect { arguments.append("--connect") }
            if extendedCommands { arguments.append("--extended-commands") }
            process = try ChildProcess(path: python, arguments, stdout: .pipe)
            let (stream, feed) = AsyncStream<String>.makeStream()
            let pending = PendingText()
            PipeReader.start(process.pipe!, chunk: { bytes in
                for line in pending.append(bytes) { feed.yield(line) }
            }, end: { feed.finish() })
            // The bound of every wait on the peer: its lines end after 60 s whatever happens.
            Task { try? await Task.sleep(for: .seconds(60)); feed.finish() }
            lines = stream
            var iterator = stream.makeAsyncIterator()
            let ready = await iterator.next()
            guard let ready, let object = Self.object(ready), let port = object["port"] as? Int else {
                _ = process.stop()
                throw CentralPeerFailure("central_peer.py gave no ready line: \(ready ?? "its output ended")")
            }
            self.port = port
        }

        static func object(_ line: String) -> [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }

        func stop() { _ = process.stop() }
    }

    struct CentralPeerFailure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    /// Collects a child's output and cuts it into lines (called on the reader's thread only).
    final class PendingText: @unchecked Sendable { // touched only by PipeReader's one reading thread
        var buffer: [UInt8] = []
        func append(_ bytes: [UInt8]) -> [String] {
            buffer += bytes
            var out: [String] = []
            while let newline = buffer.firstIndex(of: 0x0A) {
                out.append(String(decoding: buffer[..<newline], as: UTF8.self))
                buffer.removeSubrange(...newline)
            }
            return out
        }
    }

    /// The next line whose object has `key` (the peer's lines end after 60 s: the bound).
    static func next(_ key: String, in iterator: inout AsyncStream<String>.Iterator) async throws -> [String: Any] {
        while let line = await iterator.next() {
            if let object = BumbleCentral.object(line), let value = object[key] as? [String: Any] { return value }
        }
        throw CentralPeerFailure("central_peer.py printed no \(key) line within 60 s")
    }

    static let name = "swift-ble"

    @Test("A Bumble scanner sees our name, service data and manufacturer data")
    func bumbleSeesTheAdvertisement() async throws {
        let peer = try await BumbleCentral(connect: false)
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let central = try await Central.open("tcp:127.0.0.1:\(peer.port)")
        let data = AdvertisingData([
            .flags([.leGeneralDiscoverable, .brEDRNotSupported]), .completeLocalName(Self.name),
            .serviceData16(uuid: 0x180F, data: [0x64]), .manufacturerSpecificData(companyID: 0x05F1, data: [0x01, 0x02]),
        ])
        let set = try await central.startAdvertising(data)
        #expect(!set.usesExtendedCommands)
        let seen = try await Self.next("advertisement", in: &lines)
        #expect(seen["address"] as? String == Self.hostAddress)
        // 02 01 06 | 0A 09 "swift-ble" | 04 16 0F 18 64 | 05 FF F1 05 01 02
        #expect(seen["data"] as? String == "020106" + "0a09" + "73776966742d626c65" + "04160f1864" + "05fff1050102")
        await central.close()
    }

    @Test("Extended advertising carries 200 octets to a Bumble extended scanner")
    func extendedDataPast31Octets() async throws {
        let peer = try await BumbleCentral(connect: false, extendedCommands: true)
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let central = try await Central.open("tcp:127.0.0.1:\(peer.port)")
        let payload = (0..<196).map { UInt8($0) }
        let data = AdvertisingData([.manufacturerSpecificData(companyID: 0x05F1, data: payload)])
        let set = try await central.startAdvertising(data, parameters: AdvertisingParameters(kind: .nonConnectable, format: .extended))
        #expect(set.usesExtendedCommands)
        let seen = try await Self.next("advertisement", in: &lines)
        #expect(seen["legacy"] as? Bool == false)
        #expect(seen["data"] as? String == ([0xC7, 0xFF, 0xF1, 0x05] + payload).hexString(separator: "").lowercased())
        await central.close()
    }

    @Test("A Bumble central connects: a peripheral-role Connection; after its disconnect advertising resumes")
    func bumbleConnectsAndAdvertisingResumes() async throws {
        let peer = try await BumbleCentral(connect: true)
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let central = try await Central.open("tcp:127.0.0.1:\(peer.port)")
        var incoming = await central.incomingConnections().makeAsyncIterator()
        let set = try await central.startAdvertising(AdvertisingData([.completeLocalName(Self.name)]),
                                                     parameters: AdvertisingParameters(resumeAfterDisconnect: true))
        var events = await set.events().makeAsyncIterator()
        _ = try await Self.next("connected", in: &lines)
        let link = try #require(await incoming.next())
        #expect(link.role == .peripheral)
        #expect(link.peer == LEAddress(BluetoothAddress("C0:00:00:00:00:01")!, type: .random))
        guard case .connected(let fromSet)? = await events.next() else { Issue.record("no .connected event"); return }
        #expect(fromSet === link)
        let gone = try await Self.next("disconnected", in: &lines)
        #expect(gone["reason"] as? Int == 0x13)
        guard case .resumed? = await events.next() else {
            Issue.record("advertising did not resume"); return
        }
        // Bumble sees the advertisement again after the link.
        _ = try await Self.next("advertisement", in: &lines)
        #expect(await !link.isConnected)
        await central.close()
    }

    @Test("ble advertise --extended: a Bumble extended scanner sees 58 octets, and the tool exits 0 after --duration")
    func cliExtendedAdvertising() async throws {
        let peer = try await BumbleCentral(connect: false, extendedCommands: true)
        defer { peer.stop() }
        var lines = peer.lines.makeAsyncIterator()
        let serviceData = String(repeating: "ab", count: 40)
        let run = Task {
            try await BLETool.run(["-d", "tcp:127.0.0.1:\(peer.port)", "advertise", "--extended", "--non-connectable",
                                   "--name", "swift-ble", "--service-data", "FEAA:" + serviceData, "--duration", "2"])
        }
        let seen = try await Self.next("advertisement", in: &lines)
        // Flags 06 | 0A 09 "swift-ble" | 2B 16 AA FE + 40 x AB: 3 + 11 + 44 = 58 octets, past 31.
        #expect(seen["data"] as? String == "020106" + "0a09" + "73776966742d626c65" + "2b16aafe" + serviceData)
        #expect(seen["legacy"] as? Bool == false)
        let finished = try await run.value
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(finished.stderr.contains("advertising 58 octets (extended commands, set 0) for 2 s"), "\(finished.stderr)")
    }
}
