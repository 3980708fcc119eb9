import Dispatch
import Glibc
import Testing
@testable import BLECore
@testable import BLETransport

/// `SocketErrorWatch` reports a socket error that comes with nothing to read, which a dispatch
/// read source never reports. On the host (no Bluetooth) a connected UDP socket plays the HCI
/// socket of a removed adapter: a datagram to a closed port on the loopback comes back as an
/// ICMP port unreachable, which sets the socket's error to ECONNREFUSED and makes it poll
/// EPOLLERR alone (Linux udp(7)).
@Suite(.timeLimit(.minutes(1)))
struct SocketErrorWatchTests {
    /// A UDP socket connected to a loopback port nobody listens on.
    static func socketToClosedPort() throws -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        // Bind a socket to a free port, note it, close it: the port is closed.
        let probe = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(probe >= 0)
        defer { _ = Glibc.close(probe) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) } }
        try #require(bound == 0, "bind: errno \(errno)")
        var named = sockaddr_in()
        var namedLength = length
        _ = withUnsafeMutablePointer(to: &named) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &namedLength) } }

        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        let connected = withUnsafePointer(to: &named) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) } }
        try #require(connected == 0, "connect: errno \(errno)")
        return fd
    }

    @Test("An error with nothing to read: the read source stays silent, the watch reports ECONNREFUSED once")
    func reportsTheErrorAReadSourceMisses() async throws {
        let fd = try Self.socketToClosedPort()
        let queue = DispatchQueue(label: "socket-error-watch")
        let (reads, readSink) = AsyncStream.makeStream(of: Void.self)
        let readSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        readSource.setEventHandler { readSink.yield() }
        readSource.resume()
        let (errors, errorSink) = AsyncStream.makeStream(of: Int32.self)
        let watch = queue.sync { SocketErrorWatch(fd: fd, queue: queue) { errorSink.yield($0) } }
        try #require(watch != nil)
        // The port is closed: the datagram comes back as ECONNREFUSED on the socket.
        var byte: UInt8 = 0x01
        _ = send(fd, &byte, 1, 0)
        var iterator = errors.makeAsyncIterator()
        #expect(await iterator.next() == ECONNREFUSED)
        queue.sync {
            readSource.cancel()
            readSink.finish()
            errorSink.finish()
        }
        var readEvents = 0
        for await _ in reads { readEvents += 1 }
        #expect(readEvents == 0, "the read source fired for an error with nothing to read")
        #expect(await iterator.next() == nil, "the watch reported more than once")
        queue.sync { watch?.cancel() }
        _ = Glibc.close(fd)
    }
}
