import Dispatch
import Synchronization
import BLETestSupport
import GATTServer

/// A `SimulatedATTServer` in front of another: while closed it holds what the client sends;
/// opening passes the held PDUs on, in order. It records every PDU it passes on (`received`).
/// Called on the test bed's queue.
final class GatedATTServer: SimulatedATTServer {
    let inner: any SimulatedATTServer
    let queue: DispatchQueue
    private let state = Mutex<(isOpen: Bool, held: [(pdu: [UInt8], link: any ATTServerLink)], passed: [[UInt8]])>((true, [], []))

    init(_ inner: any SimulatedATTServer, queue: DispatchQueue) {
        self.inner = inner
        self.queue = queue
    }

    func linkConnected(_ link: any ATTServerLink) { inner.linkConnected(link) }
    func linkDisconnected(_ link: any ATTServerLink) { inner.linkDisconnected(link) }

    func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        let pass = state.withLock { s -> Bool in
            if s.isOpen {
                s.passed.append(pdu)
                return true
            }
            s.held.append((pdu, link))
            return false
        }
        if pass { inner.receive(pdu, from: link) }
    }

    var heldCount: Int { state.withLock { $0.held.count } }

    /// Every PDU passed on to the server so far, in order.
    var received: [[UInt8]] { state.withLock { $0.passed } }

    func close() { state.withLock { $0.isOpen = false } }

    /// Opens the gate on the queue, passing on what it held first.
    func open() {
        queue.async { self.openOnQueue() }
    }

    private func openOnQueue() {
        let held = state.withLock { s -> [(pdu: [UInt8], link: any ATTServerLink)] in
            s.isOpen = true
            s.passed += s.held.map(\.pdu)
            defer { s.held = [] }
            return s.held
        }
        for h in held { inner.receive(h.pdu, from: h.link) }
    }
}
