import Dispatch
import BLETestSupport

/// A peer that answers every request, each response held back `delay` on the test's
/// scheduler (just under the 30 s ATT transaction timeout, say): the hostile server that
/// would keep a discovery going for hours. Without a delay it passes responses at once.
final class SlowATTServer: SimulatedATTServer, @unchecked Sendable { // state is touched only on the adapter queue
    let inner: any SimulatedATTServer
    let queue: DispatchQueue
    /// How long each response is held, on which clock; nil: not held (`setDelay`).
    private(set) var delay: (Duration, scheduler: any TimerScheduler)?
    private var links: [ObjectIdentifier: DelayingLink] = [:]

    init(wrapping inner: any SimulatedATTServer, queue: DispatchQueue) {
        self.inner = inner
        self.queue = queue
    }

    /// From now on each response waits `delay` on `scheduler` (nil: none).
    func setDelay(_ delay: Duration?, scheduler: any TimerScheduler) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            queue.async {
                self.delay = delay.map { ($0, scheduler) }
                c.resume()
            }
        }
    }

    func linkConnected(_ link: any ATTServerLink) {
        let delaying = DelayingLink(link, owner: self)
        links[ObjectIdentifier(link)] = delaying
        inner.linkConnected(delaying)
    }

    func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        guard let delaying = links[ObjectIdentifier(link)] else { return inner.receive(pdu, from: link) }
        inner.receive(pdu, from: delaying)
    }

    func linkDisconnected(_ link: any ATTServerLink) {
        guard let delaying = links.removeValue(forKey: ObjectIdentifier(link)) else { return }
        inner.linkDisconnected(delaying)
    }

    /// The server's end as the inner server sees it: what it sends waits `owner.delay`.
    final class DelayingLink: ATTServerLink, @unchecked Sendable { // used only on the adapter queue
        let base: any ATTServerLink
        unowned let owner: SlowATTServer
        init(_ base: any ATTServerLink, owner: SlowATTServer) { self.base = base; self.owner = owner }
        var centralDescription: String { base.centralDescription }
        func sendToCentral(_ pdu: [UInt8]) {
            guard let (delay, scheduler) = owner.delay else { return base.sendToCentral(pdu) }
            let base = base
            _ = scheduler.schedule(after: delay) { base.sendToCentral(pdu) }
        }
    }
}
