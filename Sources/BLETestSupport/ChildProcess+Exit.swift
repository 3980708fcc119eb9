#if canImport(Glibc)
import Glibc
#endif
import BLETransport
import Dispatch
import Foundation
import Synchronization

extension ChildProcess {
    /// Writes `bytes` to the child's stdin (`input`: a pipe or the terminal) without waiting:
    /// the child must have room for them.
    ///
    ///     try child.send(Array("hello\n".utf8))
    ///
    /// - Throws: `ChildProcessError` ("write to stdin") with EAGAIN when the pipe is full,
    ///   EPIPE or EIO when the child closed it or ended, EBADF without an `input`.
    public func send(_ bytes: [UInt8]) throws(ChildProcessError) {
        guard let input else { throw ChildProcessError(path: path, operation: "write to stdin", code: EBADF) }
        // A pipe whose reader is gone raises SIGPIPE in the writing thread: blocked here and
        // taken back, so the error comes back as EPIPE instead of ending the test process.
        var pipeSignal = sigset_t(), previous = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        defer {
            var none = timespec()
            while sigtimedwait(&pipeSignal, nil, &none) == SIGPIPE {}
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        var offset = 0
        while offset < bytes.count {
            let written: Int?
            do {
                written = try bytes.withUnsafeBytes { raw in
                    Result { () throws(SystemCallError) in
                        try FileDescriptorIO.retryingInterrupts("write") { Glibc.write(input, raw.baseAddress! + offset, raw.count - offset) }
                    }
                }.get()
            } catch {
                throw ChildProcessError(path: path, operation: "write to stdin", code: error.errno)
            }
            guard let written else { throw ChildProcessError(path: path, operation: "write to stdin", code: EAGAIN) }
            offset += written
        }
    }

    /// The exit status (or 128 + the signal that ended it) once the child has ended; SIGKILL
    /// if it still runs after `limit` or when the waiting task is cancelled (status 137). The
    /// wait blocks a thread of its own, never a task's. Reaps the child: call it once.
    ///
    ///     let exit = Task { await child.exitStatus(killingAfter: .seconds(90)) }
    public func exitStatus(killingAfter limit: Duration) async -> Int32 {
        let watch = ExitWatch(pid)
        DispatchQueue.global().asyncAfter(deadline: .now() + limit.dispatchInterval) { watch.send(SIGKILL) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: watch.wait()) }
            }
        } onCancel: {
            watch.send(SIGKILL)
        }
    }

    /// The exit status (or 128 + the signal that ended it), once the child has ended, however
    /// long it runs: for children whose life the caller bounds itself (with `stop()`).
    /// Reaps the child: call it once.
    public func exitStatus() async -> Int32 {
        let pid = self.pid
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Self.wait(pid)) }
        }
    }

    /// Sends SIGTERM and waits for the child to end, sending SIGKILL if it still runs after
    /// `limit`; its exit status (or 128 + signal).
    ///
    ///     defer { broker.stop() }
    @discardableResult
    public func stop(killingAfter limit: Duration = .seconds(10)) -> Int32 {
        Self.wait(pid, afterSending: SIGTERM, killingAfter: limit)
    }

    /// Blocks until `pid` ends, after sending it `signal` if given and with SIGKILL after
    /// `limit` if given; its exit status, or 128 + the signal that ended it.
    @discardableResult
    public static func wait(_ pid: pid_t, afterSending signal: Int32? = nil, killingAfter limit: Duration? = nil) -> Int32 {
        let watch = ExitWatch(pid)
        if let signal { watch.send(signal) }
        if let limit { DispatchQueue.global().asyncAfter(deadline: .now() + limit.dispatchInterval) { watch.send(SIGKILL) } }
        return watch.wait()
    }
}

/// One wait for a child's end. The child is reaped only after the wait has marked it ended,
/// and a signal is sent only while it is not, so that a late SIGKILL (a timer, a cancelled
/// task) can never reach another process that reused the pid.
final class ExitWatch: Sendable {
    let pid: pid_t
    private let reaped = Mutex(false)

    init(_ pid: pid_t) { self.pid = pid }

    /// Sends `signal` to the child unless it has been reaped.
    func send(_ signal: Int32) {
        reaped.withLock { if !$0 { _ = kill(pid, signal) } }
    }

    /// Blocks until the child ends, reaps it and returns its status; 0 for a pid that is not
    /// a child of this process (ECHILD: nothing to wait for).
    func wait() -> Int32 {
        var info = siginfo_t()
        // WNOWAIT: the child stays a zombie, so its pid is not reused before `reaped` is set.
        _ = try? FileDescriptorIO.retryingInterrupts("waitid") { Int(waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)) }
        reaped.withLock { $0 = true }
        return (try? FileDescriptorIO.waitForExit(pid)) ?? 0
    }
}

extension Duration {
    /// The duration for DispatchTime arithmetic, in nanoseconds (at most about 292 years).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return .nanoseconds(overflow ? Int.max : Int(clamping: whole.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue))
    }
}
