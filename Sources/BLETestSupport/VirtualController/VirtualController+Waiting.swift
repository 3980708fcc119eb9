import Dispatch
import BLECore

/// Waiting for what the stack does, without sleeping: each wait resumes as soon as its
/// condition holds, and gives up after a real-time `timeout` (a safety net that passing tests
/// never reach; it does not move virtual time).
extension VirtualController {
    final class Waiter: @unchecked Sendable { // touched only on the controller's queue
        let id: UInt64
        let what: String
        let condition: @Sendable (VirtualController) -> Bool
        let continuation: CheckedContinuation<Result<Void, VirtualControllerError>, Never>
        var timeout: DispatchWorkItem?

        init(id: UInt64, what: String, condition: @escaping @Sendable (VirtualController) -> Bool,
             continuation: CheckedContinuation<Result<Void, VirtualControllerError>, Never>) {
            self.id = id
            self.what = what
            self.condition = condition
            self.continuation = continuation
        }
    }

    /// Waits until `condition` holds; it is evaluated on the controller's queue after every
    /// change, and may read the controller's properties.
    ///
    ///     try await vc.waitUntil("a link") { !$0.connections.isEmpty }
    public func waitUntil(_ what: String, timeout: Duration = .seconds(5),
                          _ condition: @escaping @Sendable (VirtualController) -> Bool) async throws(VirtualControllerError) {
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, VirtualControllerError>, Never>) in
            queue.async { self.addWaiter(what, timeout: timeout, condition, c) }
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
        try await waitUntil("L2CAP frame #\(count) on CID 0x\(String(channelID, radix: 16))", timeout: timeout) { vc in
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

    func addWaiter(_ what: String, timeout: Duration, _ condition: @escaping @Sendable (VirtualController) -> Bool,
                   _ c: CheckedContinuation<Result<Void, VirtualControllerError>, Never>) {
        if condition(self) { return c.resume(returning: .success(())) }
        nextWaiterID += 1
        let waiter = Waiter(id: nextWaiterID, what: what, condition: condition, continuation: c)
        let id = waiter.id
        let ms = Int(timeout.nanoseconds / 1_000_000)
        let item = DispatchWorkItem { [weak self] in
            guard let self, let index = self.waiters.firstIndex(where: { $0.id == id }) else { return }
            let w = self.waiters.remove(at: index)
            w.continuation.resume(returning: .failure(.timeout(waitingFor: w.what, milliseconds: ms)))
        }
        waiter.timeout = item
        waiters.append(waiter)
        queue.asyncAfter(deadline: .now() + .milliseconds(ms), execute: item)
    }

    func checkWaiters() {
        guard !waiters.isEmpty else { return }
        var index = 0
        while index < waiters.count {
            let w = waiters[index]
            if w.condition(self) {
                waiters.remove(at: index)
                w.timeout?.cancel()
                w.continuation.resume(returning: .success(()))
            } else {
                index += 1
            }
        }
    }
}
