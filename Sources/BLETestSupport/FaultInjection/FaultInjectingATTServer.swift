import Dispatch
import ATT
import BLECore
import GATTServer
import BLEWire
import BLETransport

/// Wraps a simulated ATT server and makes it misbehave on purpose:
/// - at a chosen request, does something other than answer (`on(_:occurrence:_:)`): the way to
///   make a peer die exactly in the middle of a discovery, a long read or a long write. When a
///   trigger fires, the request is swallowed (no response) and the trigger's action runs on the
///   next turn of `queue` (so it may call back into the controller);
/// - ignores ATT_MTU (`padResponses(to:)`, `sendToCentrals(_:)`);
/// - answers slowly (`delayResponses(by:on:)`), just under the 30 s transaction timeout, say.
///
///     let server = FaultInjectingATTServer(wrapping: GATTServer(database: .lab(), queue: vc.queue), queue: vc.queue)
///     server.on(.readBlobRequest, occurrence: 3) { try? vc.disconnect(peer, reason: .connectionTimeout) }
public final class FaultInjectingATTServer: SimulatedATTServer {
    public let inner: any SimulatedATTServer
    /// The queue the test bed calls the server on.
    public let queue: DispatchQueue
    private let onQueueKey = DispatchSpecificKey<Bool>()

    fileprivate struct Trigger {
        let opcode: ATTOpcode?
        let occurrence: Int
        let action: @Sendable () -> Void
    }

    /// What the server counts and how it misbehaves; the test bed calls on `queue`, the controls hop there.
    fileprivate struct State {
        var triggers: [Trigger] = []
        var seen: [UInt8: Int] = [:]
        var requestsSeen = 0
        var swallowed = 0
        /// What the inner server sends goes through these links (`ResponseFaultLink`).
        var links: [ObjectIdentifier: ResponseFaultLink] = [:]
        var paddedSize: Int?
        var delay: (Duration, scheduler: any TimerScheduler)?
    }
    fileprivate let state: QueueConfined<State>

    public init(wrapping inner: any SimulatedATTServer, queue: DispatchQueue) {
        self.inner = inner
        self.queue = queue
        state = QueueConfined(State(), on: queue)
        queue.setSpecific(key: onQueueKey, value: true)
    }

    /// When the `occurrence`-th PDU with `opcode` (counted from now; nil: any request)
    /// arrives, it is not answered and `action` runs on the next turn of the queue. Fires once.
    public func on(_ opcode: ATTOpcode?, occurrence: Int = 1, _ action: @escaping @Sendable () -> Void) {
        onQueue {
            let base = opcode.map { self.state.value.seen[$0.rawValue] ?? 0 } ?? self.state.value.requestsSeen
            self.state.value.triggers.append(Trigger(opcode: opcode, occurrence: base + max(1, occurrence), action: action))
        }
    }

    /// Requests swallowed by triggers so far.
    public var swallowedCount: Int { onQueue { state.value.swallowed } }

    /// From now on every response shorter than `size` octets is padded with 0xEE to `size`
    /// (nil: sent as it is): a peer that ignores ATT_MTU (Vol 3, Part F, 3.2.8).
    public func padResponses(to size: Int?) {
        onQueue { self.state.value.paddedSize = size }
    }

    /// From now on every PDU the server sends waits `delay` on `scheduler` (nil: none), in order.
    public func delayResponses(by delay: Duration?, on scheduler: any TimerScheduler) {
        onQueue { self.state.value.delay = delay.map { ($0, scheduler) } }
    }

    /// Sends `pdu` as it is to the central on every link (an oversized notification, say).
    public func sendToCentrals(_ pdu: [UInt8]) {
        onQueue {
            let links = self.state.value.links.values
            for link in links { link.base.sendToCentral(pdu) }
        }
    }

    // MARK: SimulatedATTServer

    public func linkConnected(_ link: any ATTServerLink) {
        let wrapped = ResponseFaultLink(link, owner: self)
        state.value.links[ObjectIdentifier(link)] = wrapped
        inner.linkConnected(wrapped)
    }

    public func linkDisconnected(_ link: any ATTServerLink) {
        guard let wrapped = state.value.links.removeValue(forKey: ObjectIdentifier(link)) else { return inner.linkDisconnected(link) }
        inner.linkDisconnected(wrapped)
    }

    public func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        let link: any ATTServerLink = state.value.links[ObjectIdentifier(link)] ?? link
        guard let first = pdu.first else { return inner.receive(pdu, from: link) }
        let opcode = ATTOpcode(first)
        let trigger = Self.countAndTrigger(first, opcode, &state.value)
        if let trigger {
            queue.async { trigger.action() }
            return
        }
        inner.receive(pdu, from: link)
    }

    /// Counts a PDU with opcode `first`; removes and returns the trigger it fires, if any.
    private static func countAndTrigger(_ first: UInt8, _ opcode: ATTOpcode, _ s: inout State) -> Trigger? {
        s.seen[first, default: 0] += 1
        let isRequest = opcode.kind == .request
        if isRequest { s.requestsSeen += 1 }
        let seen = s.seen[first], requestsSeen = s.requestsSeen
        guard let i = s.triggers.firstIndex(where: { t in
            if let o = t.opcode { return o == opcode && seen == t.occurrence }
            return isRequest && requestsSeen == t.occurrence
        }) else { return nil }
        s.swallowed += 1
        return s.triggers.remove(at: i)
    }

    private func onQueue<T>(_ body: () -> T) -> T {
        if DispatchQueue.getSpecific(key: onQueueKey) == true { return body() }
        return queue.sync(execute: body)
    }
}

/// The server's end of a link as the inner server sees it: what it sends is padded and
/// delayed as its owner says; the link's security is the underlying link's.
private final class ResponseFaultLink: ATTServerLink, ATTServerLinkSecurity {
    let base: any ATTServerLink
    unowned let owner: FaultInjectingATTServer

    init(_ base: any ATTServerLink, owner: FaultInjectingATTServer) {
        self.base = base
        self.owner = owner
    }

    var centralDescription: String { base.centralDescription }
    var isEncrypted: Bool { (base as? any ATTServerLinkSecurity)?.isEncrypted ?? false }
    var isAuthenticated: Bool { (base as? any ATTServerLinkSecurity)?.isAuthenticated ?? false }
    var encryptionKeySize: Int { (base as? any ATTServerLinkSecurity)?.encryptionKeySize ?? 16 }

    func sendToCentral(_ pdu: [UInt8]) {
        var pdu = pdu
        let (paddedSize, delay) = (owner.state.value.paddedSize, owner.state.value.delay)
        if let size = paddedSize, let first = pdu.first, ATTOpcode(first).kind == .response, pdu.count < size {
            pdu += [UInt8](repeating: 0xEE, count: size - pdu.count)
        }
        guard let (delay, scheduler) = delay else { return base.sendToCentral(pdu) }
        let base = base, held = pdu
        _ = scheduler.schedule(after: delay) { base.sendToCentral(held) }
    }
}
