import Dispatch
import Glibc
import Testing
@testable import BLECore
@testable import BLETransport

/// `Central.close()` returns only once the transport's file descriptor is closed, so the
/// same adapter (a user-channel socket, a serial device) can be opened again at once
/// without EBUSY. A unix socket pair plays the controller link.
@Suite struct CentralCloseTests {
    /// What /proc/self/fd/N names ("socket:[12345]"), or nil once N is closed.
    static func descriptorTarget(_ fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test(.timeLimit(.minutes(1)))
    func closeReturnsAfterTheTransportDescriptorIsClosed() async throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let (hostEnd, controllerEnd) = (pair[0], pair[1])
        defer { _ = Glibc.close(controllerEnd) }
        setReceiveTimeout(controllerEnd, seconds: 5)
        let target = try #require(Self.descriptorTarget(hostEnd))
        #expect(target.hasPrefix("socket:"))

        let central = Central(transport: StreamTransport(fd: hostEnd, name: "unix:socketpair", isSocket: true))
        let powering = Task { try await central.powerOn() }
        // The transport is started once the controller end reads HCI_Reset: H4 command
        // indicator 0x01, opcode 0x0C03 (OGF 0x03, OCF 0x0003; Vol 4, Part E, 7.3.2) little-endian,
        // parameter length 0.
        #expect(readExactly(controllerEnd, 4) == [0x01, 0x03, 0x0C, 0x00])

        await central.close()
        // The descriptor number may be reused by another test at once, so compare what it names.
        #expect(Self.descriptorTarget(hostEnd) != target, "fd \(hostEnd) still open when close() returned")
        #expect(await central.state == .poweredOff)
        // The bring-up that was waiting for the Command Complete fails (the transport is gone).
        await #expect(throws: (any Error).self) { try await powering.value }
        // The other end sees the stream end.
        var byte: UInt8 = 0
        #expect(read(controllerEnd, &byte, 1) == 0)
    }
}
