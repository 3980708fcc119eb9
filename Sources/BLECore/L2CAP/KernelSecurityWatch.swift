import Synchronization
import BLEWire
import BLETransport

/// Watches the kernel's HCI monitor channel (`HCIMonitor`) while the kernel secures one link
/// for an L2CAP socket, for the packet that says why it failed (see `Tracker`). The kernel
/// hands a packet to the monitor before it acts on it, and ends the socket only after a
/// further round trip to the controller (HCI_Disconnect, then Disconnection Complete), so when
/// the socket reports the failure the watch has seen why.
final class KernelSecurityWatch: Sendable {
    /// Follows one link to `peer` through monitor events: its connection handle from the LE
    /// Connection Complete (or Enhanced Connection Complete, Vol 4, Part E, 7.7.65.1 and
    /// 7.7.65.10) that names the peer, or from `adopt`; then a Pairing Failed PDU on its SMP
    /// channel (CID 0x0006, Vol 3, Part A, 2.1; code 0x05 and the reason, Vol 3, Part H,
    /// 3.5.5) in either direction, or an Encryption Change with an error status (7.7.8).
    struct Tracker {
        let peer: LEAddress
        /// The local adapter's address (nil: whichever adapter the link is on).
        let adapter: BluetoothAddress?
        /// The adapter's index, from the monitor's replay of the adapters present.
        var adapterIndex: Int?
        /// Adapter index and connection handle of the link, once known.
        var link: (adapter: Int, handle: UInt16)?

        init(peer: LEAddress, adapter: BluetoothAddress?) {
            self.peer = peer
            self.adapter = adapter
        }

        /// What one monitor event says: the failure, or nil (the handle is kept).
        mutating func step(_ event: HCIMonitor.Event) -> KernelSecurityFailure? {
            switch event {
            case .adapterAdded(let index, let address, _, _) where address == adapter:
                adapterIndex = index
            case .packet(let index, let direction, let packet, _):
                if adapter != nil, adapterIndex != index { return nil }
                let known = link
                func onLink(_ handle: UInt16) -> Bool { known.map { $0.adapter == index && $0.handle == handle } ?? false }
                switch packet {
                case .event(let raw):
                    switch try? HCIEvent(raw) {
                    case .leConnectionComplete(let c)? where c.status == .success && c.peerAddress == peer.address:
                        link = (index, c.handle)
                    case .leEnhancedConnectionComplete(let c)? where c.status == .success && c.peerAddress == peer.address:
                        link = (index, c.handle)
                    case .encryptionChange(let c)? where c.status != .success && onLink(c.handle):
                        return .encryptionFailed(c.status)
                    default:
                        break
                    }
                case .acl(let acl) where acl.boundary != .continuing && onLink(acl.handle):
                    // Basic L2CAP header: Length (2), Channel ID (2); then the SMP code and reason.
                    let d = acl.data
                    if d.count >= 6, d[2] == 0x06, d[3] == 0x00, d[4] == 0x05 {
                        return .pairingFailed(PairingFailedReason(rawValue: d[5]), byPeer: direction == .received)
                    }
                default:
                    break
                }
            default:
                break
            }
            return nil
        }
    }

    private struct State {
        var tracker: Tracker
        var failure: KernelSecurityFailure?
    }

    private final class Box: Sendable {
        let state: Mutex<State>
        init(_ tracker: Tracker) { state = Mutex(State(tracker: tracker)) }
    }

    private let monitor: HCIMonitor
    private let box: Box
    private let reader: Task<Void, Never>

    /// Opens the monitor channel; nil when the process may not read it (CAP_NET_RAW).
    /// `adapter` is the local adapter's address (nil: the kernel picks).
    init?(peer: LEAddress, adapter: BluetoothAddress?) {
        guard let monitor = try? HCIMonitor.open() else { return nil }
        let box = Box(Tracker(peer: peer, adapter: adapter))
        self.monitor = monitor
        self.box = box
        reader = Task {
            for await event in monitor.events {
                box.state.withLock { s in
                    if s.failure == nil { s.failure = s.tracker.step(event) }
                }
            }
        }
    }

    deinit { close() }

    func close() {
        reader.cancel()
        monitor.close()
    }

    /// The failure seen so far, if any.
    var failure: KernelSecurityFailure? { box.state.withLock { $0.failure } }

    /// Takes the link's handle from a connected socket (L2CAP_CONNINFO) when no LE
    /// Connection Complete named it (the link was up before the watch opened).
    func adopt(handle: UInt16) {
        box.state.withLock { s in
            if s.tracker.link == nil, let index = s.tracker.adapterIndex { s.tracker.link = (index, handle) }
        }
    }
}
