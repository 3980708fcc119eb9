import BLETransport

/// The host's tasks with no caller waiting (`HCIHost.background`), by id. Confined to the
/// adapter queue: callers start tasks from there, and each task removes itself there.
struct BackgroundTasks {
    var running: [UInt64: Task<Void, Never>] = [:]
    var nextID: UInt64 = 0
    /// Set by `endBackground()`: a task started from then on starts cancelled.
    var ended = false
}

extension HCIHost {
    /// Runs `work` in a task of its own: what the stack does with no caller waiting (an answer
    /// to the controller, the link set-up after connecting, a disconnect of an unwanted link).
    /// `endBackground()` cancels and awaits every such task, so `Central.close()` returns with
    /// none of them left holding the host. Call it on the adapter queue (from any actor of the
    /// adapter); no isolation is claimed.
    ///
    ///     host.background { _ = try? await $0.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) }
    /// The task's first job is queued on the host's executor during this call, so tasks run
    /// in the order they were started, after the job that started them.
    nonisolated func background(_ work: @escaping @Sendable (isolated HCIHost) async -> Void) {
        _ = backgroundTask(work)
    }

    /// `background(_:)` for work that may be given up early: cancelling the returned task
    /// ends it (a reconnect attempt of a link that is closed).
    ///
    ///     let attempt = host.backgroundTask { host in await host.reconnect() }
    nonisolated func backgroundTask(_ work: @escaping @Sendable (isolated HCIHost) async -> Void) -> Task<Void, Never> {
        let id = backgroundRegistry.value.nextID
        backgroundRegistry.value.nextID &+= 1
        // Immediate: the task runs here up to its hop to the host, which queues that job now.
        let task = Task.immediate { [self] in await runBackground(id, work) }
        backgroundRegistry.value.running[id] = task
        if backgroundRegistry.value.ended { task.cancel() }
        return task
    }

    private func runBackground(_ id: UInt64, _ work: @Sendable (isolated HCIHost) async -> Void) async {
        await work(self)
        backgroundRegistry.value.running[id] = nil
    }

    /// The background tasks running now, by id.
    var backgroundTasks: [UInt64: Task<Void, Never>] { backgroundRegistry.value.running }

    /// Cancels the background tasks and waits until each has ended (after `close()`, their
    /// commands fail at once with `.transportLost`). A task started later, even after this
    /// returned, starts cancelled: its work still runs, its commands fail at once, and it
    /// leaves the registry when it ends.
    func endBackground() async {
        backgroundRegistry.value.ended = true
        while let (id, task) = backgroundRegistry.value.running.first {
            backgroundRegistry.value.running[id] = nil
            task.cancel()
            await task.value
        }
    }
}
