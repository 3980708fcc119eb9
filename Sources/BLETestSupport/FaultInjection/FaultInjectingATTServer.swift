import Dispatch
import ATT

/// Wraps a simulated ATT server and, at a chosen request, does something other than answer:
/// the way to make a peer die exactly in the middle of a discovery, a long read or a long
/// write. When a trigger fires, the request is swallowed (no response) and the trigger's
/// action runs on the next turn of `queue` (so it may call back into the controller).
///
///     let server = FaultInjectingATTServer(wrapping: GATTServer(database: .lab(), queue: vc.queue), queue: vc.queue)
///     server.on(.readBlobRequest, occurrence: 3) { try? vc.disconnect(peer, reason: .connectionTimeout) }
public final class FaultInjectingATTServer: SimulatedATTServer, @unchecked Sendable { // state is touched only on `queue` (the test bed calls there; `on` hops there)
    public let inner: any SimulatedATTServer
    /// The queue the test bed calls the server on.
    public let queue: DispatchQueue
    private let onQueueKey = DispatchSpecificKey<Bool>()

    private struct Trigger {
        let opcode: ATTOpcode?
        let occurrence: Int
        let action: @Sendable () -> Void
    }
    private var triggers: [Trigger] = []
    private var seen: [UInt8: Int] = [:]
    private var requestsSeen = 0
    private var swallowed = 0

    public init(wrapping inner: any SimulatedATTServer, queue: DispatchQueue) {
        self.inner = inner
        self.queue = queue
        queue.setSpecific(key: onQueueKey, value: true)
    }

    /// When the `occurrence`-th PDU with `opcode` (counted from now; nil: any request)
    /// arrives, it is not answered and `action` runs on the next turn of the queue. Fires once.
    public func on(_ opcode: ATTOpcode?, occurrence: Int = 1, _ action: @escaping @Sendable () -> Void) {
        onQueue {
            let base = opcode.map { self.seen[$0.rawValue] ?? 0 } ?? self.requestsSeen
            self.triggers.append(Trigger(opcode: opcode, occurrence: base + max(1, occurrence), action: action))
        }
    }

    /// Requests swallowed by triggers so far.
    public var swallowedCount: Int { onQueue { swallowed } }

    // MARK: SimulatedATTServer

    public func linkConnected(_ link: any ATTServerLink) { inner.linkConnected(link) }
    public func linkDisconnected(_ link: any ATTServerLink) { inner.linkDisconnected(link) }

    public func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        guard let first = pdu.first else { return inner.receive(pdu, from: link) }
        let opcode = ATTOpcode(first)
        seen[first, default: 0] += 1
        let isRequest = opcode.kind == .request
        if isRequest { requestsSeen += 1 }
        if let i = triggers.firstIndex(where: { t in
            if let o = t.opcode { return o == opcode && seen[first] == t.occurrence }
            return isRequest && requestsSeen == t.occurrence
        }) {
            let trigger = triggers.remove(at: i)
            swallowed += 1
            queue.async { trigger.action() }
            return
        }
        inner.receive(pdu, from: link)
    }

    private func onQueue<T>(_ body: () -> T) -> T {
        if DispatchQueue.getSpecific(key: onQueueKey) == true { return body() }
        return queue.sync(execute: body)
    }
}
