import Dispatch
import ATT
import BLETestSupport

/// A peer that ignores ATT_MTU: while armed, each response it sends is padded to `size`
/// octets; `sendRaw` pushes any PDU (an oversized notification...) to the client.
final class OversizingATTServer: SimulatedATTServer, @unchecked Sendable { // state is touched only on the adapter queue
    let inner: any SimulatedATTServer
    let queue: DispatchQueue
    private(set) var paddedSize: Int?
    private var links: [ObjectIdentifier: PaddingLink] = [:]

    init(wrapping inner: any SimulatedATTServer, queue: DispatchQueue) {
        self.inner = inner
        self.queue = queue
    }

    /// Pads every response to `size` octets from now on (nil: sends them as they are).
    func pad(to size: Int?) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            queue.async { self.paddedSize = size; c.resume() }
        }
    }

    /// Sends `pdu` to the client on every link, as it is.
    func sendRaw(_ pdu: [UInt8]) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            queue.async {
                for link in self.links.values { link.base.sendToCentral(pdu) }
                c.resume()
            }
        }
    }

    func linkConnected(_ link: any ATTServerLink) {
        let padding = PaddingLink(link, owner: self)
        links[ObjectIdentifier(link)] = padding
        inner.linkConnected(padding)
    }

    func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        guard let padding = links[ObjectIdentifier(link)] else { return inner.receive(pdu, from: link) }
        inner.receive(pdu, from: padding)
    }

    func linkDisconnected(_ link: any ATTServerLink) {
        guard let padding = links.removeValue(forKey: ObjectIdentifier(link)) else { return }
        inner.linkDisconnected(padding)
    }

    final class PaddingLink: ATTServerLink, @unchecked Sendable { // used only on the adapter queue
        let base: any ATTServerLink
        unowned let owner: OversizingATTServer
        init(_ base: any ATTServerLink, owner: OversizingATTServer) { self.base = base; self.owner = owner }
        var centralDescription: String { base.centralDescription }
        func sendToCentral(_ pdu: [UInt8]) {
            guard let size = owner.paddedSize, let first = pdu.first, ATTOpcode(first).kind == .response, pdu.count < size else {
                return base.sendToCentral(pdu)
            }
            base.sendToCentral(pdu + [UInt8](repeating: 0xEE, count: size - pdu.count))
        }
    }
}
