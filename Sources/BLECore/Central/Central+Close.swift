extension Central {
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
