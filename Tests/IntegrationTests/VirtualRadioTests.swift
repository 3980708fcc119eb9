import Foundation
import Synchronization
import Testing
import BLETestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The Bumble virtual radio as an independent H4 peer, driven with raw bytes over a plain
/// TCP socket. Expected bytes come from the Core Specification (cited per test).
@Suite("Virtual radio")
struct VirtualRadioTests {
    @Test("HCI_Reset over H4 gets exactly Command Complete with status Success")
    func resetCommandComplete() async throws {
        try await VirtualRadio.with(scenario: "heart-rate") { radio in
            #expect(radio.transportSpec == "tcp:127.0.0.1:\(radio.port)")
            let socket = try H4Socket(port: radio.port)
            // HCI_Reset: OGF 0x03, OCF 0x0003 -> opcode 0x0C03, no parameters (Vol 4 Part E 7.3.2),
            // preceded by the H4 command indicator 0x01 (Vol 4 Part A 2).
            try socket.send([0x01, 0x03, 0x0C, 0x00])
            // Command Complete (event 0x0E, Vol 4 Part E 7.7.14): Num_HCI_Command_Packets = 1,
            // Command_Opcode = 0x0C03, Status = 0x00.
            let reply = try socket.receivePacket(deadline: .now + .seconds(5))
            #expect(reply == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        }
    }

    @Test("Active scan reports the heart-rate peripheral's random static address")
    func scanFindsPeripheral() async throws {
        try await VirtualRadio.with(scenario: "heart-rate") { radio in
            let hrm = try #require(radio.device("hrm"))
            #expect(hrm.addressType == "random")
            #expect(hrm.name == "Polar H10 sim")
            let expectedAddress = try #require(Self.addressBytes(hrm.address))
            // Random static address: two most significant bits are 11 (Vol 6 Part B 1.3.2.1).
            #expect(expectedAddress[5] & 0xC0 == 0xC0)

            let socket = try H4Socket(port: radio.port)
            try socket.command([0x03, 0x0C, 0x00], deadline: .now + .seconds(5))
            // LE Set Scan Parameters (0x200B, Vol 4 Part E 7.8.10): active, interval and window
            // 0x0010 (10 ms), own address public, accept all.
            try socket.command([0x0B, 0x20, 0x07, 0x01, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00], deadline: .now + .seconds(5))
            // LE Set Scan Enable (0x200C, 7.8.11): enable, no duplicate filtering.
            try socket.command([0x0C, 0x20, 0x02, 0x01, 0x00], deadline: .now + .seconds(5))

            // The sensor is the scenario's only advertiser: the first report must be its, with
            // a random address (Address_Type 0x01). Waiting past the deadline throws.
            let deadline = ContinuousClock.now + .seconds(5)
            var first: (address: [UInt8], addressType: UInt8)?
            while first == nil {
                first = Self.firstAdvertisingReport(try socket.receivePacket(deadline: deadline)).map { ($0.address, $0.addressType) }
            }
            #expect(first?.address == expectedAddress)
            #expect(first?.addressType == 0x01)
        }
    }

    @Test("stop() ends the process and closes the port; a second stop() is harmless")
    func stopEndsProcess() async throws {
        let radio = try await VirtualRadio.start(scenario: "heart-rate")
        let pid = radio.processIdentifier
        let port = radio.port
        #expect(Glibc.kill(pid, 0) == 0)
        #expect(radio.devices.count == 1)
        radio.stop()
        #expect(Glibc.kill(pid, 0) == -1)
        #expect(errno == ESRCH)
        #expect(throws: H4Socket.Failure.self) { try H4Socket(port: port) }
        radio.stop()
    }

    @Test("with() stops the radio when the body throws")
    func withStopsOnThrow() async throws {
        struct BodyFailed: Error {}
        let pid = Mutex<Int32>(0)
        await #expect(throws: BodyFailed.self) {
            try await VirtualRadio.with(scenario: "flaky") { radio in
                pid.withLock { $0 = radio.processIdentifier }
                #expect(radio.devices.map(\.id) == ["dropper", "mute"])
                throw BodyFailed()
            }
        }
        let stoppedPid = pid.withLock { $0 }
        #expect(stoppedPid > 0)
        #expect(Glibc.kill(stoppedPid, 0) == -1 && errno == ESRCH)
    }

    @Test("kill() ends the process at once")
    func killEndsProcess() async throws {
        let radio = try await VirtualRadio.start(scenario: "many")
        #expect(radio.devices.map(\.name) == (1...8).map { "HR-\($0)" })
        #expect(Set(radio.devices.map(\.address)).count == 8)
        radio.kill()
        #expect(Glibc.kill(radio.processIdentifier, 0) == -1 && errno == ESRCH)
        radio.stop()
    }

    @Test("An unknown scenario name fails with the list of bundled scenarios")
    func unknownScenario() async throws {
        let error = await #expect(throws: VirtualRadioError.self) {
            try await VirtualRadio.start(scenario: "no-such-scenario")
        }
        guard case .scenarioNotFound(let name, let available)? = error else {
            Issue.record("unexpected error \(String(describing: error))")
            return
        }
        #expect(name == "no-such-scenario")
        #expect(available.contains("heart-rate"))
    }

    @Test("A radio that exits before its ready line reports its status and stderr")
    func earlyExitCarriesStderr() async throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("virtual-radio-bad-\(UInt32.random(in: .min ... .max)).json").path
        try Data("[{\"id\": \"x\"}]".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = await #expect(throws: VirtualRadioError.self) {
            try await VirtualRadio.start(scenario: path, timeout: .seconds(15))
        }
        guard case .exitedEarly(let status, let tail)? = error else {
            Issue.record("unexpected error \(String(describing: error))")
            return
        }
        #expect(status != 0)
        #expect(tail.contains("needs at least 'id' and 'name'"))
    }

    /// "F0:5E:B1:00:00:01" -> bytes as sent over HCI (least significant first, Vol 4 Part E 5.2).
    static func addressBytes(_ text: String) -> [UInt8]? {
        let octets = text.split(separator: ":").compactMap { UInt8($0, radix: 16) }
        return octets.count == 6 ? Array(octets.reversed()) : nil
    }

    /// Address type and address of the first report in an LE Advertising Report (subevent
    /// 0x02, Vol 4 Part E 7.7.65.2) or LE Extended Advertising Report (0x0D, 7.7.65.13).
    static func firstAdvertisingReport(_ packet: [UInt8]) -> (addressType: UInt8, address: [UInt8])? {
        // 0x04 event, 0x3E LE Meta, length, subevent, Num_Reports, ...
        guard packet.count >= 5, packet[0] == 0x04, packet[1] == 0x3E, packet[4] >= 1 else { return nil }
        let offset: Int
        switch packet[3] {
        case 0x02: offset = 6  // Event_Type (1), then Address_Type
        case 0x0D: offset = 7  // Event_Type (2), then Address_Type
        default: return nil
        }
        guard packet.count >= offset + 7 else { return nil }
        return (packet[offset], Array(packet[(offset + 1)..<(offset + 7)]))
    }
}

/// A blocking H4 client over TCP for these tests only; every read waits with poll() and a deadline.
final class H4Socket {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let fd: Int32

    init(port: Int) throws(Failure) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port) failed: errno \(code)")
        }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws(Failure) {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw Failure(description: "send failed: errno \(errno)") }
    }

    /// Sends an HCI command (opcode LE, length, parameters) and waits for its Command Complete
    /// with status 0x00, skipping other events.
    func command(_ body: [UInt8], deadline: ContinuousClock.Instant) throws(Failure) {
        try send([0x01] + body)
        while true {
            let packet = try receivePacket(deadline: deadline)
            if packet.count >= 7, packet[0] == 0x04, packet[1] == 0x0E, packet[4] == body[0], packet[5] == body[1] {
                guard packet[6] == 0x00 else {
                    throw Failure(description: "command \(body.prefix(2)) failed with status \(packet[6])")
                }
                return
            }
        }
    }

    /// Reads one H4 packet (event or ACL data), indicator included.
    func receivePacket(deadline: ContinuousClock.Instant) throws(Failure) -> [UInt8] {
        let indicator = try receive(1, deadline: deadline)
        switch indicator[0] {
        case 0x04:
            let header = try receive(2, deadline: deadline)
            return indicator + header + (try receive(Int(header[1]), deadline: deadline))
        case 0x02:
            let header = try receive(4, deadline: deadline)
            let length = Int(header[2]) | Int(header[3]) << 8
            return indicator + header + (try receive(length, deadline: deadline))
        default:
            throw Failure(description: "unexpected H4 packet indicator \(indicator[0])")
        }
    }

    private func receive(_ count: Int, deadline: ContinuousClock.Instant) throws(Failure) -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw Failure(description: "timed out waiting for \(count) bytes") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            guard poll(&pfd, 1, ms) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: count - bytes.count)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(description: "connection closed (recv \(n), errno \(errno))") }
            bytes += chunk[..<n]
        }
        return bytes
    }
}
