import BLECore
import Dispatch

/// A task executor on an adapter's queue: a task that prefers it runs its nonisolated code
/// there, beside the stack's actors, instead of on the global pool. The advertisement loop
/// runs so: a scan event wakes no thread, and the loop takes whatever is buffered in one go.
///
///     Task(executorPreference: AdapterTaskExecutor(central.executor)) { await loop.run() }
final class AdapterTaskExecutor: TaskExecutor {
    let queue: DispatchQueue

    init(_ executor: AdapterExecutor) { queue = executor.queue }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
