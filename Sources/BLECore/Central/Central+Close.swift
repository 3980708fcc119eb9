import BLEWire
extension Central {
    /// Sends HCI Disconnect for every link (and ends every restore) from a task of its own,
    /// which the caller's cancellation does not reach, and waits for the Command Statuses
    /// (each at most `bound`); then, unless the caller is cancelled, waits at most `bound`
    /// for the Disconnection Complete events.
    func disconnectAllForClose(reason: HCIStatus, bound: Duration) async {
        let links = Array(connectionsByPeer.values)
        guard !links.isEmpty else { return }
        // Awaiting a task's value does not cancel the task with its awaiting caller.
        await Task {
            await withTaskGroup(of: Void.self) { group in
                for link in links { group.addTask { await link.startClosing(reason: reason, timeout: bound) } }
            }
        }.value
        guard !Task.isCancelled else { return }
        await withTaskGroup(of: Void.self) { group in
            for link in links { group.addTask { _ = await link.waitForDisconnectionComplete(timeout: bound) } }
        }
    }

    /// Waits until the closed transport has released its endpoint (`HCITransport.whenReleased`),
    /// at most `timeout` on the central's timer source, and no longer than the calling task
    /// is not cancelled (the release goes on without the caller).
    func waitForTransportRelease(timeout: Duration) async {
        let transport = host.transport
        let executor = self.executor
        let release = Waiters<Bool, Never>(executor: executor, scheduler: scheduler)
        let released = await release.wait(deadline: (timeout, .success(false)), cancelled: { _ in .success(true) }) { id in
            // Any thread: the waiter is resumed on the queue.
            transport.whenReleased { executor.queue.async { release.resume(id, with: .success(true)) } }
        }.get()
        if !released {
            options.logger.log(.warning, "\(transport.name) did not release its endpoint within \(Int(timeout.nanoseconds / 1_000_000)) ms of closing")
        }
    }
}
