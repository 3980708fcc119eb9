#if canImport(Glibc)
import Glibc
#endif
import CHCI
import Dispatch
import BLEWire

/// The kernel's HCI monitor channel (HCI_CHANNEL_MONITOR): a copy of every HCI packet of every
/// adapter the kernel has, in both directions, and adapters coming and going, as btmon reads
/// them. Reading never disturbs the adapters. Needs CAP_NET_RAW.
///
///     let monitor = try HCIMonitor.open()
///     for await event in monitor.events { if case .packet(let hci, let direction, let packet, _) = event { ... } }
///     monitor.close()
///
/// Records follow the monitor header of the kernel (include/net/bluetooth/hci_mon.h): opcode,
/// adapter index and length, 2 octets each, little-endian, then the payload. Payloads that do
/// not decode become `.undecodable`, never a trap.
public final class HCIMonitor: Sendable {
    public enum Event: Sendable, Equatable {
        /// An HCI packet of adapter `adapter`, stamped (btsnoop microseconds) when it was read.
        case packet(adapter: Int, direction: PacketDirection, packet: HCIPacket, timestamp: Int64)
        /// An adapter the kernel registered (also sent for every adapter present at open).
        case adapterAdded(adapter: Int, address: BluetoothAddress, name: String, bus: String)
        case adapterRemoved(adapter: Int)
        /// The kernel opened (powered up) or closed the adapter's transport.
        case adapterOpened(adapter: Int)
        case adapterClosed(adapter: Int)
        /// A system note or a user log line (btmon's "= Note", "= bluetoothd").
        case note(adapter: Int?, text: String)
        /// A packet record whose payload did not decode.
        case undecodable(adapter: Int, opcode: UInt16, bytes: [UInt8], error: DecodeError)
    }

    /// Monitor opcodes (include/net/bluetooth/hci_mon.h).
    enum Opcode {
        static let newIndex: UInt16 = 0, deleteIndex: UInt16 = 1, commandPacket: UInt16 = 2, eventPacket: UInt16 = 3
        static let aclTX: UInt16 = 4, aclRX: UInt16 = 5, scoTX: UInt16 = 6, scoRX: UInt16 = 7
        static let openIndex: UInt16 = 8, closeIndex: UInt16 = 9, systemNote: UInt16 = 12, userLogging: UInt16 = 13
        static let isoTX: UInt16 = 18, isoRX: UInt16 = 19
    }

    /// Every event, in order. At most `bufferLimit` wait for the reader; later ones are
    /// dropped and counted in `droppedEvents`.
    public let events: AsyncStream<Event>
    public static let bufferLimit = 16_384
    private let continuation: AsyncStream<Event>.Continuation
    private let fd: Int32
    private let queue: DispatchQueue
    private let reading: QueueConfined<Reading>

    /// What `queue` owns: the read source (nil once closed), the one record buffer, the count
    /// of events the stream had no room for.
    private struct Reading {
        var source: (any DispatchSourceRead)?
        var buffer = [UInt8](repeating: 0, count: 6 + 65_535)
        var dropped = 0
    }

    private init(fd: Int32) {
        self.fd = fd
        queue = DispatchQueue(label: "ble.hci-monitor")
        reading = QueueConfined(Reading(), on: queue)
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingOldest(Self.bufferLimit))
    }

    /// Opens the monitor channel; the kernel first replays the adapters present.
    public static func open() throws(TransportError) -> HCIMonitor {
        // HCI_DEV_NONE (0xFFFF): the monitor channel is bound to no adapter.
        let fd = chci_open_hci_socket(0xFFFF, UInt16(HCI_CHANNEL_MONITOR))
        guard fd >= 0 else {
            let err = errno
            switch err {
            case EAFNOSUPPORT: throw .bluetoothUnsupported
            case EPERM, EACCES: throw .permissionDenied(device: "the HCI monitor channel", errno: err)
            default: throw .system(operation: "socket/bind(HCI_CHANNEL_MONITOR)", endpoint: "the HCI monitor channel", errno: err)
            }
        }
        let monitor = HCIMonitor(fd: fd)
        monitor.queue.sync { monitor.start() }
        return monitor
    }

    /// Events dropped because the reader was `bufferLimit` behind.
    public var droppedEvents: Int { queue.sync { reading.value.dropped } }

    /// Stops reading and ends `events`. Safe from any thread, more than once.
    public func close() {
        queue.async { [reading] in
            guard let source = reading.value.source else { return }
            reading.value.source = nil
            source.cancel()
        }
    }

    private func start() {
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.readAvailable() }
        source.setCancelHandler { [fd, continuation] in
            _ = Glibc.close(fd)
            continuation.finish()
        }
        reading.value.source = source
        source.resume()
    }

    private func readAvailable() {
        while reading.value.source != nil {
            let n = reading.value.buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0 {
                let err = errno
                if err == EINTR { continue }
                if err != EAGAIN && err != EWOULDBLOCK { close() }
                return
            }
            if let event = Self.event(record: reading.value.buffer[..<n], timestamp: BTSnoopEncoder.now()) {
                if case .dropped = continuation.yield(event) { reading.value.dropped += 1 }
            }
        }
    }

    /// Decodes one monitor record (header and payload); nil for records of no interest
    /// (index info, vendor diagnostics, management control).
    static func event(record: ArraySlice<UInt8>, timestamp: Int64) -> Event? {
        let bytes = Array(record)
        guard bytes.count >= 6 else { return nil }
        let opcode = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
        let rawIndex = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
        let length = Int(bytes[4]) | Int(bytes[5]) << 8
        let payload = Array(bytes[6...].prefix(length))
        let index = Int(rawIndex)
        func packet(_ type: HCIPacketType, _ direction: PacketDirection) -> Event {
            do {
                return .packet(adapter: index, direction: direction, packet: try HCIPacket(type: type, body: payload), timestamp: timestamp)
            } catch {
                return .undecodable(adapter: index, opcode: opcode, bytes: payload, error: error)
            }
        }
        switch opcode {
        case Opcode.commandPacket: return packet(.command, .sent)
        case Opcode.eventPacket: return packet(.event, .received)
        case Opcode.aclTX: return packet(.acl, .sent)
        case Opcode.aclRX: return packet(.acl, .received)
        case Opcode.scoTX: return packet(.sco, .sent)
        case Opcode.scoRX: return packet(.sco, .received)
        case Opcode.isoTX: return packet(.iso, .sent)
        case Opcode.isoRX: return packet(.iso, .received)
        case Opcode.newIndex:
            // type (1), bus (1), bdaddr (6, little-endian), name (8, NUL-padded).
            guard payload.count >= 16 else { return nil }
            let address = payload[2..<8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let name = String(decoding: payload[8..<16].prefix { $0 != 0 }, as: UTF8.self)
            return .adapterAdded(adapter: index, address: BluetoothAddress(rawValue: address), name: name, bus: HCIAdapters.busName(payload[1]))
        case Opcode.deleteIndex: return .adapterRemoved(adapter: index)
        case Opcode.openIndex: return .adapterOpened(adapter: index)
        case Opcode.closeIndex: return .adapterClosed(adapter: index)
        case Opcode.systemNote:
            return .note(adapter: rawIndex == 0xFFFF ? nil : index, text: String(decoding: payload.prefix { $0 != 0 }, as: UTF8.self))
        case Opcode.userLogging:
            // priority (1), ident length (1), ident (NUL-terminated), message.
            guard payload.count >= 2 else { return nil }
            let identLength = Int(payload[1])
            let ident = String(decoding: payload.dropFirst(2).prefix(identLength).prefix { $0 != 0 }, as: UTF8.self)
            let message = String(decoding: payload.dropFirst(2 + identLength).prefix { $0 != 0 }, as: UTF8.self)
            return .note(adapter: rawIndex == 0xFFFF ? nil : index, text: [ident, message].filter { !$0.isEmpty }.joined(separator: ": "))
        default:
            return nil
        }
    }
}
