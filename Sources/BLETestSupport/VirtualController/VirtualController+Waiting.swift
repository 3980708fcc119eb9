import Dispatch
import BLECore
import BLEWire

/// Waiting for what the stack does, without sleeping: each wait resumes as soon as its
/// condition holds, and gives up after a real-time `timeout` (a safety net that passing tests
/// never reach; it does not move virtual time) or when the waiting task is cancelled.
extension VirtualController {
    /// A task waiting in `waitUntil`, kept in `state` until its condition holds, its
    /// `timeout` fires or it is cancelled.
    struct Waiter {
        let id: UInt64
        let what: String
        let condition: @Sendable (VirtualController) -> Bool
        let continuation: CheckedContinuation<Result<Void, VirtualControllerError>, Never>
        let timeout: DispatchWorkItem
    }

    /// Waits until `condition` holds; it is evaluated on the controller's queue after every
    /// change, and may read the controller's properties.
    ///
    ///     try await vc.waitUntil("a link") { !$0.connections.isEmpty }
    public func waitUntil(_ what: String, timeout: Duration = .seconds(5),
                          _ condition: @escaping @Sendable (VirtualController) -> Bool) async throws(VirtualControllerError) {
        // Taken before the wait starts, so that a cancellation can find the waiter (or learn
        // that it is not added yet).
        let id = onQueue { () -> UInt64 in
            nextWaiterID += 1
            unaddedWaiters.insert(nextWaiterID)
            return nextWaiterID
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<Void, VirtualControllerError>, Never>) in
                queue.async { self.addWaiter(id, what, timeout: timeout, condition, c) }
            }
        } onCancel: {
            queue.async { self.cancelWaiter(id) }
        }
        try result.get()
    }

    /// Waits for the `count`-th command with `opcode` since the transport was made, and returns it.
    ///
    ///     let create = try await vc.waitForCommand(.leCreateConnection)
    @discardableResult
    public func waitForCommand(_ opcode: HCIOpcode, count: Int = 1, timeout: Duration = .seconds(5)) async throws(VirtualControllerError) -> HCICommandPacket {
        try await waitUntil("command \(opcode) #\(count)", timeout: timeout) { vc in vc.commands.lazy.filter { $0.opcode == opcode }.count >= count }
        return onQueue { commands.filter { $0.opcode == opcode }[count - 1] }
    }

    /// Waits until `count` ACL packets arrived from the host in all, and returns them all.
    @discardableResult
    public func waitForACL(count: Int, timeout: Duration = .seconds(5)) async throws(VirtualControllerError) -> [ACLDataPacket] {
        try await waitUntil("\(count) ACL packets", timeout: timeout) { $0.aclPackets.count >= count }
        return aclReceived
    }

    /// Waits for the `count`-th complete L2CAP frame from the host on `channelID`, and returns it.
    @discardableResult
    public func waitForL2CAP(channelID: UInt16, count: Int = 1, timeout: Duration = .seconds(5)) async throws(VirtualControllerError) -> L2CAPFrame {
        try await waitUntil("L2CAP frame #\(count) on CID \(channelID.hex)", timeout: timeout) { vc in
            vc.framesReceived.lazy.filter { $0.channelID == channelID }.count >= count
        }
        return onQueue { framesReceived.filter { $0.channelID == channelID }[count - 1] }
    }

    /// Waits until a link to `peer` exists and returns it.
    @discardableResult
    public func waitForConnection(to peer: LEAddress, timeout: Duration = .seconds(5)) async throws(VirtualControllerError) -> VirtualConnection {
        try await waitUntil("a link to \(peer)", timeout: timeout) { vc in vc.links.values.contains { $0.peer == peer } }
        return try onQueue { () throws(VirtualControllerError) in
            guard let link = links.values.first(where: { $0.peer == peer }) else { throw .notConnected(peer) }
            return link.snapshot
        }
    }

    func addWaiter(_ id: UInt64, _ what: String, timeout: Duration, _ condition: @escaping @Sendable (VirtualController) -> Bool,
                   _ c: CheckedContinuation<Result<Void, VirtualControllerError>, Never>) {
        // Gone from `unaddedWaiters`: its task was cancelled before it got here.
        if unaddedWaiters.remove(id) == nil { return c.resume(returning: .failure(.cancelled(waitingFor: what))) }
        if condition(self) { return c.resume(returning: .success(())) }
        let ms = Int(timeout.nanoseconds / 1_000_000)
        let item = DispatchWorkItem { [weak self] in
            guard let self, let index = self.waiters.firstIndex(where: { $0.id == id }) else { return }
            let w = self.waiters.remove(at: index)
            w.continuation.resume(returning: .failure(.timeout(waitingFor: w.what, milliseconds: ms)))
        }
        waiters.append(Waiter(id: id, what: what, condition: condition, continuation: c, timeout: item))
        queue.asyncAfter(deadline: .now() + .milliseconds(ms), execute: item)
        // A new waiter is a change too: a wait may be for another wait to be in place.
        checkWaiters()
    }

    /// On the queue: the task waiting as `id` was cancelled. A waiter not added yet (its
    /// cancellation overtook it on the queue) is failed when it arrives; one already resumed
    /// is left alone.
    func cancelWaiter(_ id: UInt64) {
        if unaddedWaiters.remove(id) != nil { return }
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        let w = waiters.remove(at: index)
        w.timeout.cancel()
        w.continuation.resume(returning: .failure(.cancelled(waitingFor: w.what)))
    }

    func checkWaiters() {
        guard !waiters.isEmpty else { return }
        var index = 0
        while index < waiters.count {
            let w = waiters[index]
            if w.condition(self) {
                waiters.remove(at: index)
                w.timeout.cancel()
                w.continuation.resume(returning: .success(()))
            } else {
                index += 1
            }
        }
    }
}
