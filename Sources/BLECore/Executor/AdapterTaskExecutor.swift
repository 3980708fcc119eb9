import Dispatch

/// A task executor on an adapter's queue: a task that prefers it runs its nonisolated code
/// there, beside the stack's actors, instead of on the global pool. The advertisement loop
/// runs so: a scan event wakes no thread, and the loop takes whatever is buffered in one go.
/// Tests start their tasks on it (`VirtualController.task`), so that settling the queue
/// covers them too.
///
///     Task(executorPreference: AdapterTaskExecutor(central.executor)) { await loop.run() }
package final class AdapterTaskExecutor: TaskExecutor {
    let queue: DispatchQueue

    package init(_ executor: AdapterExecutor) { queue = executor.queue }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
