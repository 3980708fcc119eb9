extension HCIHost {
    /// Runs `work` in a task of its own: what the stack does with no caller waiting (an answer
    /// to the controller, the link set-up after connecting, a disconnect of an unwanted link).
    /// `endBackground()` cancels and awaits every such task, so `Central.close()` returns with
    /// none of them left holding the host.
    ///
    ///     host.background { _ = try? await $0.send(HCICommand.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) }
    /// The task runs on the host's executor from its start, like the host's own work.
    func background(_ work: @escaping @Sendable (isolated HCIHost) async -> Void) {
        _ = backgroundTask(work)
    }

    /// `background(_:)` for work that may be given up early: cancelling the returned task
    /// ends it (a reconnect attempt of a link that is closed).
    func backgroundTask(_ work: @escaping @Sendable (isolated HCIHost) async -> Void) -> Task<Void, Never> {
        let id = nextBackgroundTask
        nextBackgroundTask &+= 1
        let task = Task { [self] in
            await work(self)
            backgroundEnded(id)
        }
        backgroundTasks[id] = task
        return task
    }

    private func backgroundEnded(_ id: UInt64) {
        backgroundTasks[id] = nil
    }

    /// Cancels the background tasks and waits until each has ended (after `close()`, their
    /// commands fail at once with `.transportLost`).
    func endBackground() async {
        while let (id, task) = backgroundTasks.first {
            backgroundTasks[id] = nil
            task.cancel()
            await task.value
        }
    }
}
