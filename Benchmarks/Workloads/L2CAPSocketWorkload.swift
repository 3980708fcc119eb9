import BLECore
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import BLEWire

/// l2cap socket: SDUs into an `L2CAPSocketChannel`'s socket. This machine's kernel has no
/// AF_BLUETOOTH, so an AF_UNIX SOCK_SEQPACKET socket pair stands in for the kernel's L2CAP
/// socket (one write, one SDU, the same non-blocking writes and write source); a thread reads
/// the other end as fast as it can. Two ways in: `enqueue` from a job on the executor's queue
/// (the write alone), and `send(_:)` awaited from a task off the queue, which hops onto the
/// queue for each SDU (the `L2CAPChannel` send that an ATT bearer over the kernel uses). The
/// difference per SDU is the hop. The credit-based `send(_:timeout:)` is not measured: it
/// needs the peer's MTU from BT_SNDMTU, which a socket pair has not.
enum L2CAPSocketWorkload {
    enum Path: String, CaseIterable {
        case queue = "enqueue on the executor's queue"
        case hop = "send(_:) from a task (a queue hop per SDU)"
    }

    struct Failed: Error, CustomStringConvertible { let description: String }

    static let peer = LEAddress(BluetoothAddress(rawValue: 0xF0_00_00_00_4C_32), type: .random)

    /// `count` SDUs of `sduSize` bytes, best of `runs`; SDUs per second, wall and CPU time per SDU.
    static func run(path: Path, sduSize: Int, count: Int, runs: Int) async throws -> Measurement {
        let sdu = (0..<sduSize).map { UInt8(truncatingIfNeeded: $0) }
        var times = RunTimes()
        for _ in 0..<runs {
            var pair: [Int32] = [-1, -1]
            let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { throw Failed(description: "socketpair: errno \(errno)") }
            let flags = fcntl(pair[0], F_GETFL)
            _ = fcntl(pair[0], F_SETFL, flags | O_NONBLOCK)
            let executor = AdapterExecutor(label: "bench-socket")
            let channel = L2CAPSocketChannel(fd: pair[0], peer: peer, psm: nil, executor: executor)
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                executor.queue.async { channel.startReading(); c.resume() }
            }
            let peerEnd = pair[1]
            let mark = RunTimes.start()
            async let received = read(peerEnd, sdus: count, size: sduSize)
            switch path {
            case .queue:
                executor.queue.async { for _ in 0..<count { channel.enqueue(sdu) } }
            case .hop:
                try await Task.detached {
                    for _ in 0..<count { try await channel.send(sdu) }
                }.value
            }
            let got = await received
            times.record(since: mark)
            channel.close()
            _ = Glibc.close(peerEnd)
            guard got == count * sduSize else { throw Failed(description: "the peer end read \(got) of \(count * sduSize) bytes") }
        }
        var m = times.measurement("l2cap socket: L2CAPSocketChannel \(path.rawValue) -> AF_UNIX SOCK_SEQPACKET stand-in, \(sduSize)-byte SDUs",
                                  operations: count)
        m.extra["sduBytes"] = Double(sduSize)
        m.extra["wallNanosecondsPerSDU"] = m.seconds / Double(count) * 1e9
        return m
    }

    /// Reads `sdus` SDUs of `size` bytes from `fd` (blocking) on a thread of its own; the bytes read.
    static func read(_ fd: Int32, sdus: Int, size: Int) async -> Int {
        await withCheckedContinuation { (c: CheckedContinuation<Int, Never>) in
            Thread.detachNewThread {
                var buffer = [UInt8](repeating: 0, count: 65_536)
                var total = 0
                for _ in 0..<sdus {
                    var n = 0
                    repeat {
                        n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    } while n < 0 && errno == EINTR
                    guard n > 0 else { break }
                    total += n
                }
                c.resume(returning: total)
            }
        }
    }
}
