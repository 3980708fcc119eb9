#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import BLEWire
import Synchronization

/// Plays a btsnoop capture back as if its controller were attached.
///
/// Script mode (default): the capture's host-to-controller packets are the script, as two
/// queues: commands, and data (ACL and the rest). The host's flow control decides how the two
/// interleave (command credits, controller buffers), so each queue is followed on its own: a
/// command the host sends is compared with the capture's next command, a data packet with its
/// next data packet (a difference is recorded in `mismatches` and play goes on).
/// Controller-to-host packets are delivered in capture order, each as soon as the host has
/// sent as many commands and as many data packets as the capture shows before it, so a
/// Command Complete arrives after its command and a response after its request, never on a
/// wall clock.
/// `.freeRunning` delivers every received packet at once, whatever the host sends (decoding a
/// foreign capture).
///
///     let t = try ReplayTransport(path: "session.btsnoop")
///     try t.start(on: executor.queue) { event in ... }
///     // ... run the stack, then, on the start queue: #expect(t.mismatches.isEmpty && t.expectedRemaining == 0)
///
/// The replay's progress is owned by the start queue: `start` makes it, confined there, and
/// `send`, `close`, the deliveries and the counters below reach it there.
public final class ReplayTransport: HCITransport, Sendable {
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Deliver every received packet without waiting for the host's packets.
        public static let freeRunning = Options(rawValue: 1)
        /// When the capture is played out, stay open instead of reporting `.closed(nil)`.
        public static let stayOpenWhenExhausted = Options(rawValue: 2)
    }

    /// A host packet that differs from the capture's script.
    public struct Mismatch: Sendable, Hashable, CustomStringConvertible {
        /// Record number in the capture (from 1) of the expected packet; nil past the end.
        public var record: Int?
        public var expected: HCIPacket?
        public var sent: HCIPacket

        public var description: String {
            guard let expected, let record else { return "host sent \(Self.text(sent)) after the capture's last host packet" }
            return "record \(record): capture has \(Self.text(expected)), host sent \(Self.text(sent))"
        }

        static func text(_ p: HCIPacket) -> String { p.h4.hexString(separator: " ") }
    }

    public let name: String
    public let options: Options
    private let records: [BTSnoopRecord]
    /// Indices in `records` of the host's commands, and of its other packets (data).
    private let commandSlots: [Int]
    private let dataSlots: [Int]
    /// For each record, how many host commands and data packets precede it in the capture.
    private let gates: [(commands: Int, data: Int)]
    /// Host packets in the capture's script.
    private let sentTotal: Int
    /// Set once, by `start`.
    private let run = AtomicLazyReference<QueueConfined<Run>>()
    /// `close()` came before `start`: the transport never opens.
    private let closedBeforeStart = Atomic<Bool>(false)

    /// The replay's progress, on the start queue.
    private struct Run {
        var sentCommands = 0
        var sentData = 0
        /// Index in `records` of the next record to look at for delivery.
        var nextDelivery = 0
        var handler: (@Sendable (TransportEvent) -> Void)?
        var isOpen = true
        /// `start` schedules the first pump.
        var pumpScheduled = true
        var exhaustedReported = false
        var mismatches: [Mismatch] = []
        var delivered = 0
        var expectedRemaining: Int
    }

    /// Differences between what the host sent and the capture's script. Read on the start queue.
    public var mismatches: [Mismatch] { run.load()?.value.mismatches ?? [] }
    /// Received packets handed to the stack so far. Read on the start queue.
    public var delivered: Int { run.load()?.value.delivered ?? 0 }
    /// Host packets of the script not sent yet. Read on the start queue.
    public var expectedRemaining: Int { run.load()?.value.expectedRemaining ?? sentTotal }
    /// Received packets in the capture.
    public let receivedTotal: Int

    /// Delivered per queue turn, so other work on the adapter queue interleaves with a long replay.
    static let batch = 64

    /// Plays `records` (for example `BTSnoopReader.records`).
    public init(records: [BTSnoopRecord], name: String = "replay", options: Options = []) {
        self.records = records
        self.name = name
        self.options = options
        var commands: [Int] = [], data: [Int] = [], gates: [(commands: Int, data: Int)] = []
        gates.reserveCapacity(records.count)
        for (i, r) in records.enumerated() {
            gates.append((commands.count, data.count))
            guard r.direction == .sent else { continue }
            if case .command = r.packet { commands.append(i) } else { data.append(i) }
        }
        commandSlots = commands
        dataSlots = data
        self.gates = gates
        sentTotal = records.count { $0.direction == .sent }
        receivedTotal = records.count - sentTotal
    }

    /// Loads a btsnoop capture (H4 or Linux monitor datalink).
    public convenience init(path: String, options: Options = []) throws(TransportError) {
        let name = TransportSpec.replay(path: path).description
        let bytes = try Self.readFile(path, endpoint: name)
        let capture: BTSnoopReader
        do {
            capture = try BTSnoopReader(bytes: bytes)
        } catch {
            throw .malformedStream(endpoint: name, detail: "not a readable btsnoop capture: \(error)")
        }
        self.init(records: capture.records, name: name, options: options)
    }

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        guard !closedBeforeStart.load(ordering: .acquiring) else { throw .closed(endpoint: name) }
        let started = QueueConfined(Run(handler: handler, expectedRemaining: sentTotal), on: queue)
        guard run.storeIfNil(started) === started else { throw .closed(endpoint: name) }
        queue.async { [weak self] in self?.pump(started) }
    }

    public func send(_ packet: HCIPacket) throws(TransportError) {
        guard let run = run.load(), run.value.isOpen else { throw .closed(endpoint: name) }
        let slot: Int?
        if case .command = packet {
            let sent = run.value.sentCommands
            slot = sent < commandSlots.count ? commandSlots[sent] : nil
            run.value.sentCommands += 1
        } else {
            let sent = run.value.sentData
            slot = sent < dataSlots.count ? dataSlots[sent] : nil
            run.value.sentData += 1
        }
        if let slot {
            if records[slot].packet != packet {
                run.value.mismatches.append(Mismatch(record: slot + 1, expected: records[slot].packet, sent: packet))
            }
            run.value.expectedRemaining -= 1
        } else {
            run.value.mismatches.append(Mismatch(record: nil, expected: nil, sent: packet))
        }
        schedulePump(run)
    }

    public func close() {
        guard let run = run.load() else {
            closedBeforeStart.store(true, ordering: .releasing)
            return
        }
        run.value.isOpen = false
        run.value.handler = nil
    }

    private func schedulePump(_ run: QueueConfined<Run>) {
        guard !run.value.pumpScheduled else { return }
        run.value.pumpScheduled = true
        run.queue.async { [weak self] in self?.pump(run) }
    }

    /// Delivers what the script allows now, one batch per queue turn.
    private func pump(_ run: QueueConfined<Run>) {
        run.value.pumpScheduled = false
        var budget = Self.batch
        let free = options.contains(.freeRunning)
        while run.value.isOpen && run.value.nextDelivery < records.count
                && (free || (gates[run.value.nextDelivery].commands <= run.value.sentCommands
                             && gates[run.value.nextDelivery].data <= run.value.sentData)) {
            let record = records[run.value.nextDelivery]
            run.value.nextDelivery += 1
            guard record.direction == .received else { continue }
            if budget == 0 {
                run.value.nextDelivery -= 1
                schedulePump(run)
                return
            }
            budget -= 1
            run.value.delivered += 1
            // Copied out first: the stack may send from the handler.
            let handler = run.value.handler
            handler?(.packet(record.packet))
        }
        guard run.value.isOpen, run.value.nextDelivery == records.count, free || run.value.expectedRemaining <= 0 else { return }
        if !options.contains(.stayOpenWhenExhausted) && !run.value.exhaustedReported {
            run.value.exhaustedReported = true
            let handler = run.value.handler
            run.value.isOpen = false
            run.value.handler = nil
            handler?(.closed(nil))
        }
    }

    static func readFile(_ path: String, endpoint: String) throws(TransportError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let err = errno
            if err == ENOENT { throw .unreachable(endpoint: endpoint, detail: "no capture file at \(path)") }
            throw .system(operation: "open capture", endpoint: endpoint, errno: err)
        }
        defer { _ = Glibc.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { bytes.append(contentsOf: chunk[..<n]); continue }
            if n == 0 { return bytes }
            if errno == EINTR { continue }
            throw .system(operation: "read capture", endpoint: endpoint, errno: errno)
        }
    }
}
