import Dispatch
import Glibc
import Synchronization
import Testing
@testable import BLECore
@testable import BLETransport
import BLEWire

/// The order in which a kernel L2CAP socket, its dispatch sources and the channel end. An
/// AF_UNIX SOCK_SEQPACKET socket pair stands in for the L2CAP socket (one read, one SDU).
@Suite struct L2CAPSocketChannelCloseTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xF0_00_00_00_48_52), type: .random)

    /// A non-blocking SOCK_SEQPACKET pair: (channel end, peer end).
    static func socketPair() throws -> (Int32, Int32) {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        try #require(socketpair(AF_UNIX, type, 0, &pair) == 0, "socketpair: \(errnoName(errno))")
        return (pair[0], pair[1])
    }

    /// A send from a task off the executor's queue, while the queue is held and the peer has
    /// gone: the write and the channel's end happen on the queue, after the read that saw the
    /// end of stream; the close handler runs once, on the queue, and the socket is closed
    /// only after its read source is cancelled.
    @Test(.timeLimit(.minutes(1)))
    func sendOffTheQueueEndsTheChannelOnTheQueueOnce() async throws {
        let (fd, peerEnd) = try Self.socketPair()
        let target = try #require(CentralCloseTests.descriptorTarget(fd))
        let executor = AdapterExecutor(label: "socket-close")
        let channel = L2CAPSocketChannel(fd: fd, peer: Self.peer, psm: nil, executor: executor)
        let closes = Mutex<[Bool]>([])
        let (ended, endedSink) = AsyncStream.makeStream(of: LinkError.self)
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            executor.queue.async {
                channel.startReading()
                channel.setHandlers(receive: { _ in }, close: { error in
                    closes.withLock { $0.append(executor.isOnQueue) }
                    endedSink.yield(error)
                })
                c.resume()
            }
        }

        executor.queue.suspend()
        _ = Glibc.close(peerEnd)
        let sending = Task { () async -> LinkError? in
            do throws(LinkError) { try await channel.send([0x0A, 0x01, 0x00]); return nil } catch { return error }
        }
        // Runs ahead of the send when the send waits for the queue, as it must.
        executor.queue.async { channel.readAvailable() }
        executor.queue.resume()

        let sendError = await sending.value
        var events = ended.makeAsyncIterator()
        let first = await events.next()
        // End of stream without an error: the channel ends as lost, and the send reports it.
        guard case .transportLost? = first else { Issue.record("expected .transportLost, got \(String(describing: first))"); return }
        #expect(sendError == first)
        #expect(closes.withLock { $0 } == [true])

        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            executor.queue.async { channel.io?.whenClosed { c.resume() } ?? c.resume() }
        }
        #expect(CentralCloseTests.descriptorTarget(fd) != target, "fd \(fd) still open after the read source's cancel handler")
        channel.close()
    }

    /// A connect wait that fails (here on its timeout; the socket never becomes writable
    /// because the peer reads nothing) returns only after its write source's cancel handler
    /// closed the socket: no source still watches the number when a new socket may get it.
    @Test(.timeLimit(.minutes(1)))
    func failedConnectWaitReturnsAfterTheSocketIsClosed() async throws {
        let (fd, peerEnd) = try Self.socketPair()
        defer { _ = Glibc.close(peerEnd) }
        let target = try #require(CentralCloseTests.descriptorTarget(fd))
        var filler = [UInt8](repeating: 0, count: 4096)
        while send(fd, &filler, filler.count, Int32(MSG_DONTWAIT)) > 0 {}
        try #require(errno == EAGAIN || errno == EWOULDBLOCK, "filling the socket: \(errnoName(errno))")

        let queue = DispatchQueue(label: "connect-wait")
        let wait = ConnectWait(fd: fd, queue: queue, peerName: "\(Self.peer)", failure: { .refused(peer: "\(Self.peer)", errno: $0) })
        do {
            try await wait.run(timeout: .milliseconds(1))
            Issue.record("a socket that never became writable connected")
        } catch {
            #expect(error == .timeout(peer: "\(Self.peer)", milliseconds: 1))
        }
        #expect(CentralCloseTests.descriptorTarget(fd) != target, "fd \(fd) still open when the failed wait returned")
    }

    /// A connect wait that succeeds leaves the socket open for the channel, with no source
    /// of its own left on it.
    @Test(.timeLimit(.minutes(1)))
    func connectedWaitLeavesTheSocketOpen() async throws {
        let (fd, peerEnd) = try Self.socketPair()
        defer { _ = Glibc.close(peerEnd); _ = Glibc.close(fd) }
        let target = try #require(CentralCloseTests.descriptorTarget(fd))
        let queue = DispatchQueue(label: "connect-wait")
        try await ConnectWait(fd: fd, queue: queue, peerName: "\(Self.peer)", failure: { .refused(peer: "\(Self.peer)", errno: $0) })
            .run(timeout: .seconds(30))
        #expect(CentralCloseTests.descriptorTarget(fd) == target)
    }
}
