import Dispatch
import GATTServer

extension GATTServer {
    /// A test waiting in `waitUntil`.
    struct ConditionWaiter {
        let condition: @Sendable (GATTServer) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
        let deadline: DispatchWorkItem
    }

    /// Waits until `condition` holds and returns true; false when `timeout` of real time passed
    /// first or the task was cancelled. The condition runs on the server's queue, at once and
    /// after every PDU received and every link change, so it may read the server's state.
    ///
    ///     #expect(await server.waitUntil("the CCCD cleared") { $0.cccdValues(of: uuid) == [0] })
    public func waitUntil(_ what: String, timeout: Duration = .seconds(10),
                          _ condition: @escaping @Sendable (GATTServer) -> Bool) async -> Bool {
        let id = await onQueue { () -> UInt64 in
            self.records.nextConditionWaiter += 1
            return self.records.nextConditionWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                queue.async { self.addConditionWaiter(id, timeout: timeout, condition, c) }
            }
        } onCancel: {
            queue.async { self.endConditionWaiter(id, held: false) }
        }
    }

    private func addConditionWaiter(_ id: UInt64, timeout: Duration, _ condition: @escaping @Sendable (GATTServer) -> Bool,
                                    _ c: CheckedContinuation<Bool, Never>) {
        if condition(self) { return c.resume(returning: true) }
        if records.cancelledConditionWaiters.remove(id) != nil { return c.resume(returning: false) }
        let deadline = DispatchWorkItem { [self] in endConditionWaiter(id, held: false) }
        records.conditionWaiters[id] = ConditionWaiter(condition: condition, continuation: c, deadline: deadline)
        let ms = Int(min(timeout / .milliseconds(1), Double(Int32.max)))
        queue.asyncAfter(deadline: .now() + .milliseconds(ms), execute: deadline)
    }

    /// Ends waiter `id` (or remembers that it ended before it was added).
    private func endConditionWaiter(_ id: UInt64, held: Bool) {
        guard let waiter = records.conditionWaiters.removeValue(forKey: id) else {
            if !held { records.cancelledConditionWaiters.insert(id) }
            return
        }
        waiter.deadline.cancel()
        waiter.continuation.resume(returning: held)
    }

    /// Something observable changed: ends the waits whose condition now holds.
    func checkConditions() {
        guard let records = hooks as? GATTServerRecords, !records.conditionWaiters.isEmpty else { return }
        for (id, waiter) in records.conditionWaiters where waiter.condition(self) {
            endConditionWaiter(id, held: true)
        }
    }
}
