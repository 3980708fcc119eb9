import BLETestSupport
import Dispatch
import Glibc
import Testing
@testable import BLECore
@testable import BLETransport

/// `ReadThread`, the reader of the fd transports and kernel L2CAP sockets, on a pipe.
@Suite("Read thread", .timeLimit(.minutes(1)))
struct ReadThreadTests {
    /// What the handler read; touched only on the test's queue.
    final class Received: @unchecked Sendable { // used only on `queue`
        var bytes: [UInt8] = []
        var calls = 0
        var waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?
        var exited = false
        var exitWaiter: CheckedContinuation<Void, Never>?

        func exit() {
            exited = true
            exitWaiter?.resume()
            exitWaiter = nil
        }

        func take(_ fd: Int32) {
            calls += 1
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let n = read(fd, &buffer, buffer.count)
                guard n > 0 else { break }
                bytes += buffer[0..<n]
            }
            if let w = waiter, bytes.count >= w.count { waiter = nil; w.continuation.resume() }
        }
    }

    @Test("Bytes reach the handler on the queue; paused, they wait in the kernel until resumed; stop closes nothing and ends in onExit")
    func pauseResumeStop() async throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd); close(writeEnd) }
        _ = DispatchFD.setNonBlocking(readEnd)
        let queue = DispatchQueue(label: "read-thread-test")
        let received = Received()
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let onQueue = Received()   // `calls` counts handler runs that were not on `queue`
        let reader = try ReadThread(fd: readEnd, queue: queue, onReadable: {
            if DispatchQueue.getSpecific(key: key) != true { onQueue.calls += 1 }
            received.take(readEnd)
        }, onExit: { received.exit() })
        try reader.start()

        try await bounded {
            await withCheckedContinuation { c in
                queue.async { received.waiter = (3, c) }
                _ = write(writeEnd, [1, 2, 3] as [UInt8], 3)
            }
        }
        queue.sync { #expect(received.bytes == [1, 2, 3]) }

        // Paused on the queue: the handler runs only on the queue and checks the state there,
        // so nothing written now can reach it before `resume`.
        queue.sync { reader.pause() }
        _ = write(writeEnd, [4, 5] as [UInt8], 2)
        let callsWhilePaused = queue.sync { received.calls }
        try await bounded {
            await withCheckedContinuation { c in
                queue.async {
                    #expect(received.bytes == [1, 2, 3])
                    #expect(received.calls == callsWhilePaused)
                    received.waiter = (5, c)
                    reader.resume()
                }
            }
        }
        queue.sync { #expect(received.bytes == [1, 2, 3, 4, 5]) }

        try await bounded {
            await withCheckedContinuation { c in
                queue.async {
                    reader.stop()
                    // onExit runs on the queue later, after this job.
                    #expect(!received.exited)
                    received.exitWaiter = c
                }
            }
        }
        // The descriptor is still ours: the reader never closes it.
        #expect(fcntl(readEnd, F_GETFD) >= 0)
        #expect(onQueue.calls == 0)
    }
}
