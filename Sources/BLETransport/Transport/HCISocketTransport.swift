#if canImport(Glibc)
import Glibc
#endif
import CHCI
import Dispatch
import BLEWire
import Synchronization

/// An HCI socket of the Linux kernel (AF_BLUETOOTH, BTPROTO_HCI) bound to one adapter.
///
/// Each read() and write() on these sockets carries exactly one packet, H4 indicator first.
/// - `.user` (HCI_CHANNEL_USER): exclusive access; the adapter must be down and not held by
///   bluetoothd. The kernel then passes every packet through untouched.
/// - `.raw` (HCI_CHANNEL_RAW): shares the adapter with the kernel's own host; copies of
///   host-to-controller traffic from other programs are skipped (counted in `skippedPackets`).
///
///     let t = try HCISocketTransport(index: 0, channel: .user)
///     try t.start(on: executor.queue) { event in ... }
public final class HCISocketTransport: HCITransport, Sendable {
    public enum Channel: Sendable, Hashable {
        case user, raw
    }

    public let name: String
    public let index: Int
    public let channel: Channel
    private let fd: Int32
    private let life: FDTransportLifecycle
    private let skipped = Atomic<Int>(0)
    /// Raw channel: packets read that were not controller-to-host (others' commands and data,
    /// vendor diagnostics).
    public var skippedPackets: Int { skipped.load(ordering: .relaxed) }

    /// One packet: indicator, ACL header and a 16-bit length's worth of payload.
    static let readBufferSize = H4Framer.maxPacketLength

    /// Opens and binds the socket. Throws with the adapter named and what to do.
    public init(index: Int, channel: Channel) throws(TransportError) {
        let device = "hci\(index)"
        name = channel == .user ? device : "hci-raw:\(index)"
        self.index = index
        self.channel = channel
        guard (0..<Int(HCI_DEV_NONE)).contains(index) else {
            throw .invalidSpec(name, reason: "adapter index \(index) is out of range 0-\(HCI_DEV_NONE - 1)")
        }
        let channelNumber = channel == .user ? HCI_CHANNEL_USER : HCI_CHANNEL_RAW
        let fd = chci_open_hci_socket(UInt16(index), UInt16(channelNumber))
        if fd < 0 { throw Self.openError(errno, index: index, device: device, channel: channel) }
        if channel == .raw {
            if chci_set_filter_all(fd) < 0 || chci_enable_direction(fd) < 0 {
                let err = errno
                _ = Glibc.close(fd)
                throw .system(operation: "setsockopt(SOL_HCI) on the raw channel", endpoint: name, errno: err)
            }
        }
        self.fd = fd
        life = FDTransportLifecycle(fd: fd, name: name)
    }

    /// Maps an errno from socket()/bind() to the error that says what to do.
    static func openError(_ err: Int32, index: Int, device: String, channel: Channel) -> TransportError {
        switch err {
        case EAFNOSUPPORT:
            return .bluetoothUnsupported
        case EPERM, EACCES:
            return .permissionDenied(device: device, errno: err)
        case EBUSY:
            return .busy(device: device)
        case ENODEV:
            let available = (try? HCIAdapters.list().map(\.index)) ?? []
            return .noSuchAdapter(index: index, available: available)
        case EUSERS:
            return .tooManyUsers(device: device)
        default:
            let channelName = channel == .user ? "HCI_CHANNEL_USER" : "HCI_CHANNEL_RAW"
            return .system(operation: "bind \(channelName)", endpoint: device, errno: err)
        }
    }

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        let name = self.name, index = self.index
        let buffer = QueueConfined(ReadBuffer(byteCount: Self.readBufferSize), on: queue)
        try life.start(on: queue, packetMode: true, isSocket: false, handler: handler,
                       onReadable: { [weak self] in self?.readAvailable(into: buffer.value.bytes) },
                       lostOnWrite: { Self.lostError($0, doing: "write", name: name, index: index) })
        // The kernel unregistering the adapter sets only the socket's error (EPIPE).
        life.watchErrors { Self.lostError($0, doing: "watch", name: name, index: index) }
    }

    public func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        life.setACLReceiver(receiver)
    }

    public func send(_ packet: HCIPacket) throws(TransportError) {
        try life.send(packet) { Self.lostError($0, doing: "write", name: name, index: index) }
    }

    public func close() { life.close() }

    public func whenReleased(_ completion: @escaping @Sendable () -> Void) { life.whenReleased(completion) }

    private func readAvailable(into readBuffer: UnsafeMutableRawBufferPointer) {
        guard let running = life.running else { return }
        while life.isOpen {
            var incoming: Int32 = -1
            let n = chci_recv_packet(fd, readBuffer.baseAddress, readBuffer.count, &incoming)
            if n < 0 {
                let err = errno
                if err == EINTR { continue }
                if err == EAGAIN || err == EWOULDBLOCK { return }
                life.fail(Self.lostError(err, doing: "read", name: name, index: index))
                return
            }
            if n == 0 {
                life.fail(.lost(endpoint: name, reason: "the kernel closed the socket (the adapter went away)"))
                return
            }
            let raw = UnsafeRawBufferPointer(rebasing: readBuffer[..<n])
            if channel == .raw {
                // Keep controller-to-host packets of the five H4 types; skip the rest.
                if incoming == 0 || HCIPacketType(rawValue: raw[0]) == nil || raw[0] == HCIPacketType.command.rawValue {
                    skipped.add(1, ordering: .relaxed)
                    continue
                }
            }
            if let aclReceiver = running.aclReceiver, let body = H4Framer.aclBody(ofDatagram: raw), aclReceiver(body) { continue }
            do {
                let packet = try H4Framer.decodeDatagram(raw, endpoint: name)
                running.deliver(packet)
            } catch {
                life.fail(error)
                return
            }
        }
    }

    private static func lostError(_ err: Int32, doing operation: String, name: String, index: Int) -> TransportError {
        switch err {
        case EPIPE, ENODEV:
            return .lost(endpoint: name, reason: "the adapter was removed or reset (\(errnoName(err)))")
        case ENETDOWN:
            return .lost(endpoint: name, reason: "the adapter is down (\(errnoName(err))); bring it up or use -d hci\(index) (user channel)")
        default:
            return .lost(endpoint: name, reason: "\(operation) failed: \(errnoName(err))")
        }
    }
}
