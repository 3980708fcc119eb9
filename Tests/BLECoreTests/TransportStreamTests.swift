import Dispatch
import Glibc
import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// A listening socket in the test plays the controller.
fileprivate struct Listener {
    let fd: Int32
    let spec: String

    static func tcp() throws -> Listener {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(fd, sa, len) == 0 && listen(fd, 4) == 0 && getsockname(fd, sa, &len) == 0
            }
        }
        try #require(ok)
        return Listener(fd: fd, spec: "tcp:127.0.0.1:\(UInt16(bigEndian: addr.sin_port))")
    }

    static func unix(path: String) throws -> Listener {
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let ok = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(fd, sa, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 && listen(fd, 4) == 0
            }
        }
        try #require(ok)
        return Listener(fd: fd, spec: "unix:\(path)")
    }

    /// The transport connected already (the connection waits in the backlog).
    func acceptOne() throws -> Int32 {
        let conn = accept(fd, nil, nil)
        try #require(conn >= 0)
        setReceiveTimeout(conn, seconds: 5)
        return conn
    }
}

@Suite struct TransportStreamTests {
    /// The controller side reads HCI_Reset byte-exact and answers Command Complete in two
    /// writes; the transport delivers one event. Then a cut packet and EOF give `.lost`.
    fileprivate func controllerConversation(_ listener: Listener) async throws {
        let transport = try TransportSpec.parse(listener.spec).open()
        #expect(transport.name == listener.spec)
        let controller = try listener.acceptOne()
        defer { close(controller) }
        let log = TransportEventLog()
        try transport.start(on: log.queue, handler: log.handler)

        try log.queue.sync { try transport.send(try HCIPacket(h4: SpecPackets.reset)) }
        try log.queue.sync { try transport.send(try HCIPacket(h4: SpecPackets.leSetScanEnable)) }
        #expect(readExactly(controller, 4) == SpecPackets.reset)
        #expect(readExactly(controller, 6) == SpecPackets.leSetScanEnable)

        writeAll(controller, Array(SpecPackets.resetComplete.prefix(3)))
        writeAll(controller, Array(SpecPackets.resetComplete.dropFirst(3)) + SpecPackets.aclReadRequest)
        let packets = await log.waitForPackets(2)
        #expect(packets.map(\.h4) == [SpecPackets.resetComplete, SpecPackets.aclReadRequest])

        writeAll(controller, [0x04, 0x0E, 0x04])
        shutdown(controller, Int32(SHUT_WR))
        let closed = await log.waitForClose()
        #expect(closed == .some(.lost(endpoint: listener.spec, reason: "stream ended in the middle of a packet (3 of 7 bytes)")))
        #expect(throws: TransportError.closed(endpoint: listener.spec)) {
            try log.queue.sync { try transport.send(try HCIPacket(h4: SpecPackets.reset)) }
        }
    }

    @Test func tcpBothWaysByteExact() async throws {
        let listener = try Listener.tcp()
        defer { close(listener.fd) }
        try await controllerConversation(listener)
    }

    @Test func unixBothWaysByteExact() async throws {
        let path = "/tmp/ble-transport-test-\(getpid()).sock"
        let listener = try Listener.unix(path: path)
        defer { close(listener.fd); unlink(path) }
        try await controllerConversation(listener)
    }

    @Test func cleanEndOfStreamIsLost() async throws {
        let listener = try Listener.tcp()
        defer { close(listener.fd) }
        let transport = try TransportSpec.parse(listener.spec).open()
        let controller = try listener.acceptOne()
        let log = TransportEventLog()
        try transport.start(on: log.queue, handler: log.handler)
        writeAll(controller, SpecPackets.resetComplete)
        close(controller)
        let events = await log.wait { $0.closeEvent != nil }
        #expect(events.packets.map(\.h4) == [SpecPackets.resetComplete])
        #expect(events.closeEvent == .some(.lost(endpoint: listener.spec, reason: "the other end closed the stream (end of file)")))
    }

    @Test func closeStopsEvents() async throws {
        let listener = try Listener.tcp()
        defer { close(listener.fd) }
        let transport = try TransportSpec.parse(listener.spec).open()
        let controller = try listener.acceptOne()
        defer { close(controller) }
        let log = TransportEventLog()
        try transport.start(on: log.queue, handler: log.handler)
        log.queue.sync { transport.close() }
        log.queue.sync { transport.close() }
        // The peer sees end of file: the fd was closed.
        #expect(readExactly(controller, 1) == [])
        let events = await log.wait(timeout: 0.2) { _ in false }
        #expect(events.isEmpty)
    }

    /// Many packets while the peer does not read: the outgoing queue holds what the socket
    /// cannot take, and everything arrives in order once the peer reads.
    @Test func fullSocketNeitherBlocksNorDrops() async throws {
        let listener = try Listener.tcp()
        defer { close(listener.fd) }
        let transport = try TransportSpec.parse(listener.spec).open()
        let controller = try listener.acceptOne()
        defer { close(controller) }
        let log = TransportEventLog()
        try transport.start(on: log.queue, handler: log.handler)
        let payload = [UInt8](repeating: 0x5A, count: 1000)
        let count = 4000 // 4 MB: more than the socket buffers hold.
        let pending = try log.queue.sync { () throws -> Int in
            for i in 0..<count {
                try transport.send(.acl(ACLDataPacket(handle: UInt16(i & 0x0FFF), boundary: .firstNonFlushable, data: payload)))
            }
            return (transport as? StreamTransport)?.pendingOutputBytes ?? 0
        }
        #expect(pending > 0)
        var received = 0
        var inOrder = true
        for i in 0..<count {
            let bytes = readExactly(controller, 5 + payload.count)
            guard bytes.count == 5 + payload.count else { break }
            if Int(bytes[1]) | Int(bytes[2] & 0x0F) << 8 != i & 0x0FFF { inOrder = false }
            received += 1
        }
        #expect(received == count)
        #expect(inOrder)
        #expect(log.queue.sync { (transport as? StreamTransport)?.pendingOutputBytes } == 0)
        log.queue.sync { transport.close() }
    }

    @Test func connectionRefusedOnAClosedPort() throws {
        let listener = try Listener.tcp()
        close(listener.fd) // bound and closed: nothing listens there now
        let error = #expect(throws: TransportError.self) { try TransportSpec.parse(listener.spec).open() }
        #expect(error == .connectionRefused(endpoint: listener.spec))
        #expect(error?.description == "connection refused by \(listener.spec): is the controller or emulator listening there?")
    }

    @Test func unresolvableHostIsUnreachable() {
        let error = #expect(throws: TransportError.self) { try TransportSpec.parse("tcp:no-such-host.invalid:9000").open() }
        guard case .unreachable(let endpoint, let detail) = error else { Issue.record("expected unreachable, got \(String(describing: error))"); return }
        #expect(endpoint == "tcp:no-such-host.invalid:9000")
        #expect(detail.hasPrefix("cannot resolve host \"no-such-host.invalid\""))
    }

    @Test func missingUnixSocket() {
        let spec = "unix:/tmp/ble-no-such-socket-\(getpid())"
        let error = #expect(throws: TransportError.self) { try TransportSpec.parse(spec).open() }
        #expect(error == .unreachable(endpoint: spec, detail: "no socket at that path (ENOENT); start the controller or emulator first"))
    }

    @Test func ptyCarriesBytesBothWaysUnchanged() async throws {
        let transport = try TransportSpec.pty.open()
        let pty = try #require(transport as? StreamTransport)
        let path = try #require(pty.ptyPath)
        #expect(path.hasPrefix("/dev/pts/"))
        #expect(transport.name == "pty:\(path)")
        let log = TransportEventLog()
        try transport.start(on: log.queue, handler: log.handler)
        let slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        try #require(slave >= 0)
        defer { close(slave) }
        // Bytes a cooked tty would rewrite (0x0D, 0x0A, 0x03 = ^C, 0x7F) must pass untouched.
        let event: [UInt8] = [0x04, 0xFF, 0x05, 0x0D, 0x0A, 0x03, 0x7F, 0x11]
        writeAll(slave, SpecPackets.resetComplete + event)
        let packets = await log.waitForPackets(2)
        #expect(packets.map(\.h4) == [SpecPackets.resetComplete, event])

        try log.queue.sync { try transport.send(try HCIPacket(h4: SpecPackets.reset)) }
        var pfd = pollfd(fd: slave, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pfd, 1, 5000) == 1)
        #expect(readExactly(slave, 4) == SpecPackets.reset)
        log.queue.sync { transport.close() }
    }

    @Test func missingSerialDevice() {
        let error = #expect(throws: TransportError.self) { try TransportSpec.parse("serial:/dev/ttyNOPE42@1000000,rtscts").open() }
        #expect(error == .noSuchSerialDevice(path: "/dev/ttyNOPE42"))
        #expect(error?.description == "serial device /dev/ttyNOPE42 does not exist; check the path (ls /dev/ttyUSB* /dev/ttyACM* /dev/ttyAMA*) and that the adapter is plugged in")
    }

    @Test func serialOnANonTerminal() {
        let error = #expect(throws: TransportError.self) { try StreamTransport.openSerial(path: "/dev/null") }
        #expect(error == .system(operation: "configure serial port (/dev/null is not a terminal device)", endpoint: "serial:/dev/null@115200", errno: ENOTTY))
    }
}
