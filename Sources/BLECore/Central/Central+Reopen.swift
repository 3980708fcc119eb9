import BLETransport

/// Opening an adapter again after it went away: the USB dongle unplugged and plugged back,
/// the kernel's adapter removed and registered again, the H4 link to a controller dropped.
/// The central's state tells the whole story: `.transportLost` while it is away (through
/// every failed attempt), `.resetting` once it opened again, `.poweredOn` when it is set up;
/// `reopenEvents()` reports each attempt.
extension Central {
    /// What the central knows about reopening between attempts (one per central).
    struct ReopenState {
        /// The running reopen, joined by later callers.
        var task: Task<ControllerInfo, any Error>?
        /// The backoff wait of the running reopen, resumed early when the adapter appears.
        var waiters: Waiters<Bool, Never>?
        var waiter: Waiters<Bool, Never>.ID?
        /// The adapter appeared while an attempt ran: the next attempt starts at once.
        var appeared = false
        /// `close()` was called: no reopen any more.
        var closed = false
    }

    /// A central whose transport `open` makes; it makes a new one each time the central
    /// reopens the adapter (`reopen`). `name` names it in states and errors. Call `powerOn()`
    /// next. The `ble` tool and the tests use it for transports that are not spec strings; an
    /// application opens a spec with `Central.open(_:options:)`, which reopens the same way.
    ///
    ///     let central = Central(opening: { () throws(TransportError) in try plug.open() }, name: "virtual")
    package init(opening open: @escaping @Sendable () throws(TransportError) -> any HCITransport, name: String, options: Options = Options()) {
        self.init(transport: DeferredTransport(name: name, open: open), options: options)
    }

    /// Opens the adapter again after `.transportLost` (or any state but `.poweredOn`) and
    /// powers it on: attempts spaced by `policy.backoff`, an attempt at once whenever the
    /// adapter appears again, until one succeeds, `policy.maxAttempts` is reached (the last
    /// attempt's error is thrown) or the calling task is cancelled (CancellationError). A
    /// second caller joins the running reopen. Returns at once when powered on. Links and
    /// scans ended with the loss; connect and scan again afterwards.
    ///
    ///     for await state in await central.stateEvents() where state == .transportLost {
    ///         try await central.reopen()
    ///     }
    @discardableResult
    public func reopen(_ policy: AdapterReopenPolicy = AdapterReopenPolicy()) async throws -> ControllerInfo {
        let task = reopenTask(policy)
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    /// Every reopen attempt, its failure and the adapter's return, from now on.
    public func reopenEvents(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> AsyncStream<AdapterReopenEvent> {
        reopenEventStream.subscribe(bufferingPolicy: bufferingPolicy)
    }

    /// The running reopen, or a new one (whose failure is logged when `logFailure`).
    /// `close()` cancels it and waits for its end.
    func reopenTask(_ policy: AdapterReopenPolicy, logFailure: Bool = false) -> Task<ControllerInfo, any Error> {
        if let running = reopening.task { return running }
        let task = Task {
            defer { reopening.task = nil }
            do {
                return try await runReopen(policy)
            } catch {
                if logFailure { options.logger.log(.error, "reopening \(spec) after it was lost failed: \(error)") }
                throw error
            }
        }
        reopening.task = task
        return task
    }

    /// The transport was lost: reopen on our own when the options ask for it.
    func reopenAfterLossIfAsked() {
        guard let policy = options.reopenAfterTransportLoss, !reopening.closed, reopening.task == nil else { return }
        _ = reopenTask(policy, logFailure: true)
    }

    /// Ends the running reopen, its watcher of the adapter's appearances included (`close()`).
    func endReopen() async {
        reopening.closed = true
        guard let task = reopening.task else { return }
        task.cancel()
        _ = await task.result
    }

    private func runReopen(_ policy: AdapterReopenPolicy) async throws -> ControllerInfo {
        if state == .poweredOn, let controllerInfo { return controllerInfo }
        guard !reopening.closed else { throw AdapterReopenError.closed(transport: spec) }
        guard host.transport is DeferredTransport else { throw AdapterReopenError.notReopenable(transport: spec) }
        if await host.lostReason == nil { await host.close() }
        // The kernel frees the adapter's index only when the old socket is closed.
        await waitForTransportRelease(timeout: .seconds(2))

        let waiters = Waiters<Bool, Never>(executor: executor, scheduler: scheduler)
        reopening.waiters = waiters
        reopening.appeared = false
        let watcher = policy.appearances?(spec).map { appearances in
            Task { [weak self] in
                for await _ in appearances { await self?.adapterAppeared() }
            }
        }
        let result: Result<ControllerInfo, any Error>
        do { result = .success(try await attempts(policy, waiters: waiters)) } catch { result = .failure(error) }
        // The watcher ends with the reopen, before the reopen's task does.
        watcher?.cancel()
        await watcher?.value
        reopening.waiters = nil
        reopening.waiter = nil
        return try result.get()
    }

    /// Attempts until one succeeds, the policy gives up, the central closes or the task is cancelled.
    private func attempts(_ policy: AdapterReopenPolicy, waiters: Waiters<Bool, Never>) async throws -> ControllerInfo {
        var attempt = 0, sinceAppeared = 0
        while true {
            attempt += 1
            sinceAppeared += 1
            let error: any Error & Sendable
            do {
                let info = try await reopenOnce()
                reopenEventStream.yield(.reopened(attempt: attempt))
                return info
            } catch let failure {
                error = failure
            }
            try Task.checkCancellation()
            guard !reopening.closed else { throw AdapterReopenError.closed(transport: spec) }
            if let max = policy.maxAttempts, attempt >= max { throw error }

            let delay = reopening.appeared ? .zero : policy.backoff.delay(attempt: sinceAppeared)
            setState(.transportLost, reason: "reopening \(spec): attempt \(attempt) failed (\(error)); next attempt in \(delay.millisecondsDescription)")
            let appeared: Bool
            if reopening.appeared {
                reopenEventStream.yield(.attemptFailed(attempt: attempt, error: error, retryIn: delay))
                appeared = true
            } else {
                appeared = await waiters.wait(deadline: (delay, .success(false)), cancelled: { _ in .success(false) }) { id in
                    reopening.waiter = id
                    // After the timer is armed: a test on a manual clock may advance it now.
                    reopenEventStream.yield(.attemptFailed(attempt: attempt, error: error, retryIn: delay))
                }.get()
                reopening.waiter = nil
            }
            try Task.checkCancellation()
            reopening.appeared = false
            if appeared {
                sinceAppeared = 0
                reopenEventStream.yield(.adapterAppeared)
            }
        }
    }

    /// One attempt: start the transport anew, then reset and set up the controller. A failure
    /// leaves the transport closed and released, ready for the next attempt.
    private func reopenOnce() async throws -> ControllerInfo {
        try await host.restart()
        do {
            return try await powerOn()
        } catch {
            if await host.lostReason == nil { await host.close() }
            await waitForTransportRelease(timeout: .seconds(2))
            throw error
        }
    }

    /// The adapter was registered again: end the backoff wait now, or mark it for the attempt
    /// under way.
    func adapterAppeared() {
        if let id = reopening.waiter, let waiters = reopening.waiters, waiters.resume(id, with: .success(true)) {
            reopening.waiter = nil
        } else if reopening.task != nil {
            reopening.appeared = true
        }
    }
}
