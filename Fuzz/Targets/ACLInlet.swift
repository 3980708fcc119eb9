@testable import BLECore
import Dispatch
import BLEWire
import BLETransport

/// The host's raw ACL inlet (`ACLInlet`, Vol 4, Part E, 5.4.2 and Vol 3, Part A, 7.2) on a
/// real `HCIHost`, fed the way a socket transport feeds it: the raw bytes of each ACL packet
/// go to the inlet's raw ATT receiver first, then, unless taken, the packet value goes
/// through the transport handler (reassembly per handle, routing to the fixed channels and
/// to the host). Links 0x0040 (and 0x0041), handle 0x0042 unknown, 0x0EFF another host's.
///
/// Input: an options octet (bits 0-1: the ATT bound the bearer sets, 517/23/247/65535;
/// bit 2: the ATT channel has handlers from the start, else its PDUs wait as early PDUs;
/// bit 3: a raw ATT receiver, bit 4: which declines every PDU; bit 5: an SMP channel with
/// handlers; bit 6: a credit-based server on PSM 0x0080 of link 0x0040, MPS 30; bit 7: link
/// 0x0041), then records of an operation octet and its body:
/// - 0, 1: one ACL packet: a flags octet (bits 0-1: handle, 2-3: Packet_Boundary_Flag, 4-5:
///   Broadcast_Flag), a length (u16 LE, at most what the input has left) and the data;
/// - 2: one L2CAP PDU cut into fragments: flags octet, channel (u16), announced length (u16),
///   payload length (u16, filled with a pattern), fragment size (u16, 1-65535), a mask of the
///   first 8 fragments to leave out; ACL packets up to 64 KiB, PDUs up to 64 KiB in pieces;
/// - 3: the bearer sets a new ATT bound (u16, via `limitInboundSDUs`);
/// - 4: the ATT channel gets its handlers now (a late bearer);
/// - 5: Disconnection Complete for a handle, and the link comes back (a new connection);
/// - 6: Number Of Completed Packets for a handle (count octet).
///
/// Properties, checked after every packet:
/// - what reaches a channel is exactly the data of the packets since the last start fragment
///   on that handle, after a basic header that announces its length and channel, and never
///   longer than the channel accepts (the bound when the header arrived);
/// - a well-formed PDU within its channel's bound that arrived on a link whose channel has
///   handlers is delivered once, whole or fragmented, raw or not;
/// - a refused PDU is longer than its bound;
/// - bounded memory: a link's reassembly holds at most the largest PDU one of its channels
///   accepts (or accepted when the PDU under way began) plus its header; early ATT PDUs at
///   most 8 KiB; the host's answers at most the link's queue limit;
/// - no trap; and when the input returns, the host, its channels and the transport are gone.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let options = input.u8()
    weak var weakHost: HCIHost?
    weak var weakTransport: InletTransport?
    do {
        let harness = InletHarness(options: options)
        weakHost = harness.host
        weakTransport = harness.transport
        harness.run(&input)
    }
    fuzzCheck(weakHost == nil, "the HCIHost outlived the input")
    fuzzCheck(weakTransport == nil, "the transport outlived the input")
    return 0
}

/// A transport read the way `HCISocketTransport` reads: raw bytes first, then the packet.
final class InletTransport: HCITransport, @unchecked Sendable { // touched only on the adapter queue (the harness's `queue.sync` blocks)
    let name = "fuzz:inlet"
    var handler: (@Sendable (TransportEvent) -> Void)?
    var raw: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
    var sent = 0

    func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) { self.handler = handler }
    func send(_ packet: HCIPacket) throws(TransportError) { sent += 1 }
    func close() {}
    func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) { raw = receiver }

    /// One ACL packet: header (handle and flags, data length) and data.
    func readACL(_ body: [UInt8]) {
        if let raw, body.withUnsafeBytes({ raw($0) }) { return }
        let datagram = [HCIPacketType.acl.rawValue] + body
        let decoded = datagram.withUnsafeBytes { raw in Result(catching: { () throws(TransportError) in try H4Framer.decodeDatagram(raw, endpoint: name) }) }
        switch decoded {
        case .success(let packet): handler?(.packet(packet))
        case .failure(let error): fuzzCheck(false, "a well-formed ACL packet did not decode: \(error)")
        }
    }

    func readEvent(code: UInt8, _ parameters: [UInt8]) { handler?(.packet(.event(HCIEventPacket(code: code, parameters: parameters)))) }
    func end() { handler?(.closed(nil)); handler = nil; raw = nil }
}

/// Timers that never fire: the inlet has none, and the host's send deadlines are left alone.
struct NoTimers: TimerScheduler {
    struct Unfired: ScheduledTimer { func cancel() {} }
    let start = ContinuousClock.now
    func now() -> ContinuousClock.Instant { start }
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any ScheduledTimer { Unfired() }
}

/// What reached a channel during one packet.
final class Deliveries: @unchecked Sendable { // touched only on the adapter queue
    var pdus: [(handle: UInt16, channelID: UInt16, bytes: [UInt8])] = []
    var refused: [(handle: UInt16, size: Int)] = []
    var kept: [CreditBasedChannel] = []
}

final class InletHarness: @unchecked Sendable { // used by the fuzzer's thread and, inside its `queue.sync` blocks, on the adapter queue: never at once
    static let handles: [UInt16] = [0x0040, 0x0041, 0x0042, 0x0EFF]
    static let attBounds = [L2CAPInboundLimits.attDefault, 23, 247, 65_535]

    let options: UInt8
    let transport = InletTransport()
    let executor = AdapterExecutor(label: "fuzz.inlet")
    let host: HCIHost
    let seen = Deliveries()
    /// Per handle: the data of the packets since its last start fragment (nil once a PDU
    /// completed, or after a reset), and the bound of its channel when the header arrived.
    var since: [UInt16: [UInt8]] = [:]
    var bound: [UInt16: Int] = [:]
    var attHandlers = false
    var generated = 0
    var packets = 0

    init(options: UInt8) {
        self.options = options
        host = HCIHost(transport: transport, executor: executor, scheduler: NoTimers())
    }

    func onQueue<T: Sendable>(_ work: @Sendable (isolated HCIHost) -> T) -> T {
        executor.queue.sync { host.assumeIsolated { work($0) } }
    }

    func run(_ input: inout FuzzInput) {
        onQueue { host in
            do { try host.start() } catch { fuzzCheck(false, "start failed: \(error)") }
            host.setACLBuffers(packetLength: 27, packetCount: 4)
            host.addForeignLink(handle: 0x0EFF)
        }
        connect(0x0040)
        if options & 0x80 != 0 { connect(0x0041) }
        while !input.isAtEnd {
            switch input.u8() % 7 {
            case 0, 1:
                let flags = input.u8()
                let length = Int(input.u16()) % (input.remaining + 1)
                packet(flags: flags, input.take(length))
            case 2:
                fragmentedPDU(&input)
            case 3:
                let maximum = Int(input.u16())
                onQueue { host in if let att = host.links[0x0040]?.att { self.bound(att, to: maximum) } }
            case 4:
                attHandlers = true
                onQueue { host in for link in host.links.values { if let att = link.att { self.installHandlers(att) } } }
            case 5:
                let handle = Self.handles[Int(input.u8() & 3)]
                // Disconnection Complete (Vol 4, Part E, 7.7.5): status, handle, reason 0x13.
                onQueue { _ in transport.readEvent(code: 0x05, [0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x13]) }
                since[handle] = nil
                if handle <= 0x0041 { connect(handle) }
            default:
                let handle = Self.handles[Int(input.u8() & 3)]
                let count = input.u8()
                // Number Of Completed Packets (7.7.19): one handle and its count.
                onQueue { _ in transport.readEvent(code: 0x13, [0x01, UInt8(handle & 0xFF), UInt8(handle >> 8), count, 0x00]) }
            }
        }
        onQueue { host in
            transport.end()
            fuzzCheck(host.links.isEmpty, "links outlived the transport")
        }
        seen.kept.removeAll()
    }

    /// A new link on `handle` with the channels the options ask for.
    func connect(_ handle: UInt16) {
        onQueue { host in
            host.addLink(handle: handle, peer: LEAddress(BluetoothAddress(rawValue: 0xF0F1_F2F3_F400 | UInt64(handle & 0xFF)), type: .public))
            let att = host.fixedChannel(handle: handle, channelID: L2CAPChannelID.att)
            if let att {
                if self.options & 0x04 != 0 || self.attHandlers { self.installHandlers(att) }
                self.bound(att, to: Self.attBounds[Int(self.options & 3)])
            }
            if self.options & 0x20 != 0, let smp = host.fixedChannel(handle: handle, channelID: L2CAPChannelID.securityManager) {
                smp.setSliceHandlers(receive: { [seen] sdu in seen.pdus.append((handle, L2CAPChannelID.securityManager, Array(sdu))) }, close: { _ in })
            }
            if self.options & 0x40 != 0, handle == 0x0040 {
                do {
                    try host.registerCreditBasedServer(handle: handle, psm: 0x0080, mtu: 100, mps: 30, credits: 4) { [seen] in seen.kept.append($0) }
                } catch { fuzzCheck(false, "registering the server failed: \(error)") }
            }
        }
        since[handle] = nil
    }

    func installHandlers(_ att: FixedChannel) {
        let handle = att.handle, seen = self.seen, declines = options & 0x10 != 0
        att.setSliceHandlers(receive: { sdu in seen.pdus.append((handle, L2CAPChannelID.att, Array(sdu))) }, close: { _ in })
        if options & 0x08 != 0 {
            att.setRawReceiver { sdu in
                if declines { return false }
                seen.pdus.append((handle, L2CAPChannelID.att, Array(sdu)))
                return true
            }
        }
    }

    /// What a bearer does with its ATT_MTU; refusals are recorded.
    func bound(_ att: FixedChannel, to maximum: Int) {
        let handle = att.handle, seen = self.seen
        att.limitInboundSDUs(to: maximum) { _, size in seen.refused.append((handle, size)) }
    }

    func fragmentedPDU(_ input: inout FuzzInput) {
        let flags = input.u8()
        let channelID = input.u16()
        let announced = input.u16()
        let payloadLength = Int(input.u16())
        let fragmentSize = max(1, Int(input.u16()))
        let skip = input.u8()
        // Bounded work per input: at most 256 KiB of generated data in at most 8,192 packets.
        let count = (payloadLength + 4 + fragmentSize - 1) / fragmentSize
        guard generated + payloadLength <= 1 << 18, packets + count <= 8192 else { return }
        generated += payloadLength
        var pdu: [UInt8] = [UInt8(announced & 0xFF), UInt8(announced >> 8), UInt8(channelID & 0xFF), UInt8(channelID >> 8)]
        pdu += (0..<payloadLength).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(flags)) }
        var offset = 0, index = 0
        while offset < pdu.count {
            let end = min(offset + fragmentSize, pdu.count)
            let boundary: UInt8 = offset == 0 ? (flags >> 2) & 0b10 : 0b01
            if index >= 8 || skip & (1 << index) == 0 {
                packet(flags: flags & ~0b1100 | boundary << 2, Array(pdu[offset..<end]))
            }
            offset = end
            index += 1
        }
    }

    /// Reads one ACL packet through the transport, then checks the properties.
    func packet(flags: UInt8, _ data: [UInt8]) {
        let handle = Self.handles[Int(flags & 3)]
        let boundary = (flags >> 2) & 3
        let field = handle | UInt16(boundary) << 12 | UInt16((flags >> 4) & 3) << 14
        let body = [UInt8(field & 0xFF), UInt8(field >> 8), UInt8(data.count & 0xFF), UInt8(data.count >> 8)] + data
        seen.pdus.removeAll()
        seen.refused.removeAll()
        packets += 1

        // The oracle: the data since the last start fragment on this handle.
        if boundary != ACLPacketBoundary.continuing.rawValue {
            since[handle] = data
            bound[handle] = nil
        } else if since[handle] != nil {
            since[handle]?.append(contentsOf: data)
            if since[handle]?.count ?? 0 > 65_539 + 65_535 { since[handle] = nil }
        }
        let pending = since[handle]
        let linked = onQueue { host in host.links[handle] != nil }
        if let pending, pending.count >= 4, bound[handle] == nil, linked {
            let cid = UInt16(pending[2]) | UInt16(pending[3]) << 8
            bound[handle] = onQueue { host in host.links[handle].map { HCIHost.inboundLimit(link: $0, channelID: cid) } ?? 0 }
        }

        onQueue { _ in transport.readACL(body) }

        var expected: [UInt8]?
        var observable = false
        if let pending, pending.count >= 4, let limit = bound[handle] {
            let length = Int(pending[0]) | Int(pending[1]) << 8
            let cid = UInt16(pending[2]) | UInt16(pending[3]) << 8
            if pending.count == length + 4, length <= limit {
                expected = Array(pending[4...])
                observable = linked && (cid == L2CAPChannelID.att && (options & 0x04 != 0 || attHandlers)
                                        || cid == L2CAPChannelID.securityManager && options & 0x20 != 0)
            }
        }
        for pdu in seen.pdus {
            fuzzCheck(pdu.handle == handle, "a packet on \(handle.hex) delivered a PDU on \(pdu.handle.hex)")
            guard let pending, pending.count >= 4 else { fuzzCheck(false, "a PDU of \(pdu.bytes.count) bytes delivered with no start fragment"); continue }
            let header = [UInt8(pdu.bytes.count & 0xFF), UInt8(pdu.bytes.count >> 8), UInt8(pdu.channelID & 0xFF), UInt8(pdu.channelID >> 8)]
            fuzzCheck(header + pdu.bytes == pending, "delivered \(pdu.bytes.count) bytes on \(pdu.channelID.hex) that are not the \(pending.count) received since the start fragment")
            fuzzCheck(pdu.bytes.count <= bound[handle] ?? -1, "delivered \(pdu.bytes.count) bytes on \(pdu.channelID.hex), more than its bound \(bound[handle] ?? -1)")
        }
        if let expected, observable {
            fuzzCheck(seen.pdus.count == 1 && seen.pdus[0].bytes == expected, "a well-formed PDU of \(expected.count) bytes was delivered \(seen.pdus.count) times")
        }
        if !seen.pdus.isEmpty { since[handle] = nil }
        for refusal in seen.refused {
            fuzzCheck(refusal.handle == handle && refusal.size > bound[handle] ?? Int.max, "refused a PDU of \(refusal.size) bytes within its bound \(bound[handle] ?? -1)")
        }
        checkBounds()
    }

    func checkBounds() {
        onQueue { host in
            for link in host.links.values {
                // A bound lowered mid-PDU applies from the next PDU: the one under way keeps its own.
                var largest = max(link.attMaximumPDU, L2CAPInboundLimits.securityManager, self.bound[link.handle] ?? 0)
                if link.channels.keys.contains(where: { $0 != L2CAPChannelID.att && $0 != L2CAPChannelID.securityManager }) { largest = max(largest, L2CAPInboundLimits.otherFixed) }
                for channel in link.creditBased.channels.values { largest = max(largest, channel.assumeIsolated { $0.mps }) }
                fuzzCheck(link.reassembler.bufferedBytes <= largest + 4, "link \(link.handle.hex) buffers \(link.reassembler.bufferedBytes) bytes, more than its largest PDU \(largest)")
                if let att = link.att { fuzzCheck(att.earlyByteCount <= FixedChannel.earlyByteLimit, "\(att.earlyByteCount) early ATT bytes") }
                fuzzCheck(link.queuedBytes <= host.aclLinkQueueLimit + 64, "link \(link.handle.hex) queues \(link.queuedBytes) bytes of answers")
            }
        }
    }
}
