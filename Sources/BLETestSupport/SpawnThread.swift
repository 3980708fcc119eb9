import Foundation
import Synchronization

/// One thread that lives as long as the process and starts every `ChildProcess`. Linux sends
/// a child's parent-death signal when the *thread* that started it ends, not the process, so
/// a child started from a pool thread that the pool later retires would be killed early.
final class SpawnThread: Sendable {
    static let shared = SpawnThread()

    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let queued = DispatchSemaphore(value: 0)

    private init() {
        Thread.detachNewThread { [self] in
            while true {
                queued.wait()
                for job in jobs.withLock({ j in defer { j = [] }; return j }) { job() }
            }
        }
    }

    /// Runs `spawn` on the thread and returns what it returned: posix_spawn's result and the pid.
    ///
    ///     let (rc, pid) = SpawnThread.shared.run { ChildProcess.spawn(...) }
    func run(_ spawn: @escaping @Sendable () -> (Int32, pid_t)) -> (Int32, pid_t) {
        let done = DispatchSemaphore(value: 0)
        // Replaced before `done` is signalled.
        let result = Mutex<(Int32, pid_t)>((ECANCELED, 0))
        jobs.withLock { $0.append { result.withLock { $0 = spawn() }; done.signal() } }
        queued.signal()
        done.wait()
        return result.withLock { $0 }
    }
}
