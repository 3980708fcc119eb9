import BLECore
import BLEWire

/// What a `FaultInjectingTransport` does to the packets it carries: nothing, a script of
/// rules, or seeded random faults.
///
///     let plan = FaultPlan.script([.init(.acl(.toHost), .drop, after: 3, count: 1)])
///     let plan = FaultPlan.random(.init(seed: 7, match: .acl(.toHost), drop: 0.1, corrupt: 0.1))
public enum FaultPlan: Sendable {
    /// Every packet passes unchanged.
    case none
    /// Rules. Each rule counts the packets it matches (whether or not it applies to them);
    /// the first rule in the list whose window (`after`, `count`) holds a packet applies.
    case script([FaultRule])
    /// A seeded pseudo-random fault per matching packet (at most one fault per packet).
    case random(RandomFaults)
}

/// Which way a packet travels through the fault transport.
public enum FaultDirection: Sendable, Hashable, CustomStringConvertible {
    /// Commands and ACL data written by the host.
    case toController
    /// Events and ACL data read from the controller.
    case toHost

    public var description: String { self == .toController ? "host->controller" : "controller->host" }
}

/// One thing done to one packet.
public enum PacketFault: Sendable, Hashable, CustomStringConvertible {
    /// The packet is lost.
    case drop
    /// The packet arrives twice in a row.
    case duplicate
    /// The packet arrives `Duration` later, on the transport's scheduler; packets behind it
    /// are not held back, so a delay also reorders.
    case delay(Duration)
    /// Only the first `keeping` bytes of the payload (ACL data, event or command
    /// parameters) survive; the HCI length field follows, so the HCI packet stays
    /// well-formed and what it carries is short.
    case truncate(keeping: Int)
    /// XORs `mask` into byte `offset` of the packet body (HCI header first, no H4
    /// indicator). When the HCI length field itself no longer matches, the packet is
    /// dropped as unparseable (a framer would reject it too).
    case corrupt(offset: Int, mask: UInt8)
    /// The stream is cut: the inner transport closes, `send` throws `.lost` and the stack
    /// receives `.closed(.lost(...))` (as when a controller or its cable goes away).
    case cut

    public var description: String {
        switch self {
        case .drop: return "drop"
        case .duplicate: return "duplicate"
        case .delay(let d): return "delay \(d)"
        case .truncate(let n): return "truncate to \(n) bytes"
        case .corrupt(let offset, let mask): return "corrupt byte \(offset) ^ \(mask.hex)"
        case .cut: return "cut"
        }
    }
}

/// Which packets a rule or random plan applies to.
public struct PacketMatch: Sendable {
    /// nil: both directions.
    public var direction: FaultDirection?
    /// Empty: every packet type.
    public var types: Set<HCIPacketType>
    /// Extra condition on the packet, if any.
    public var predicate: (@Sendable (HCIPacket) -> Bool)?

    public init(direction: FaultDirection? = nil, types: Set<HCIPacketType> = [], predicate: (@Sendable (HCIPacket) -> Bool)? = nil) {
        self.direction = direction; self.types = types; self.predicate = predicate
    }

    /// Every packet in both directions.
    public static let any = PacketMatch()
    /// ACL data packets travelling `direction`.
    public static func acl(_ direction: FaultDirection) -> PacketMatch { PacketMatch(direction: direction, types: [.acl]) }
    /// Event packets (controller to host).
    public static let events = PacketMatch(direction: .toHost, types: [.event])
    /// Command packets with `opcode` (host to controller).
    public static func command(_ opcode: HCIOpcode) -> PacketMatch {
        PacketMatch(direction: .toController, types: [.command]) { packet in
            if case .command(let c) = packet { return c.opcode == opcode }
            return false
        }
    }

    func matches(_ packet: HCIPacket, _ direction: FaultDirection) -> Bool {
        if let d = self.direction, d != direction { return false }
        if !types.isEmpty, !types.contains(packet.type) { return false }
        return predicate?(packet) ?? true
    }
}

/// A scripted fault: skip `after` matching packets, then apply `fault` to the next `count`
/// (nil: to all of them).
///
///     FaultRule(.command(HCIOpcode(rawValue: 0x1405)), .drop)          // Read RSSI never reaches the controller
///     FaultRule(.acl(.toHost), .cut, after: 10, count: 1)               // the stream ends at the 11th ACL packet
public struct FaultRule: Sendable {
    public var match: PacketMatch
    public var fault: PacketFault
    public var after: Int
    public var count: Int?

    public init(_ match: PacketMatch, _ fault: PacketFault, after: Int = 0, count: Int? = nil) {
        self.match = match; self.fault = fault; self.after = max(0, after); self.count = count
    }
}

/// Seeded random faults. Each matching packet draws one number: with the given
/// probabilities (their sum at most 1) it is dropped, duplicated, delayed (up to
/// `maximumDelay`), truncated (to a random shorter length) or corrupted (one byte in
/// `corruptRegion` XORed with a random non-zero mask); otherwise it passes.
public struct RandomFaults: Sendable {
    /// Which bytes a corruption may hit.
    public enum Region: Sendable, Hashable {
        /// Any byte of the body.
        case anywhere
        /// The HCI header (ACL: handle, flags and length; event: code and length; command:
        /// opcode and length).
        case hciHeader
        /// The L2CAP basic header (length and channel ID) of an ACL start fragment.
        case l2capHeader
        /// The HCI header and, for ACL start fragments, the L2CAP basic header.
        case headers
        /// Everything after those headers.
        case payload
    }

    public var seed: UInt64
    public var match: PacketMatch
    public var drop: Double
    public var duplicate: Double
    public var delay: Double
    public var truncate: Double
    public var corrupt: Double
    public var maximumDelay: Duration
    public var corruptRegion: Region

    public init(seed: UInt64, match: PacketMatch = .any, drop: Double = 0, duplicate: Double = 0, delay: Double = 0,
                truncate: Double = 0, corrupt: Double = 0, maximumDelay: Duration = .milliseconds(50),
                corruptRegion: Region = .anywhere) {
        self.seed = seed; self.match = match; self.drop = drop; self.duplicate = duplicate; self.delay = delay
        self.truncate = truncate; self.corrupt = corrupt; self.maximumDelay = maximumDelay; self.corruptRegion = corruptRegion
    }
}

/// Counts of what a fault transport did in one direction.
public struct FaultStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Packets offered in this direction.
    public var packets = 0
    public var passed = 0
    public var dropped = 0
    public var duplicated = 0
    public var delayed = 0
    public var truncated = 0
    public var corrupted = 0
    /// Corrupted packets whose HCI header no longer parsed (dropped).
    public var unparseable = 0

    public init() {}

    /// Packets that were changed, lost, repeated or held back.
    public var faulted: Int { dropped + duplicated + delayed + truncated + corrupted }

    public var description: String {
        "\(packets) packets: \(passed) passed, \(dropped) dropped, \(duplicated) duplicated, \(delayed) delayed, \(truncated) truncated, \(corrupted) corrupted (\(unparseable) unparseable)"
    }
}

/// One fault applied, for the log (`FaultInjectingTransport.appliedFaults`).
public struct AppliedFault: Sendable, Hashable, CustomStringConvertible {
    public var direction: FaultDirection
    /// Index of the packet among those offered in its direction, from 0.
    public var packetIndex: Int
    public var packetType: HCIPacketType
    public var fault: PacketFault

    public var description: String { "\(direction) #\(packetIndex) \(packetType): \(fault)" }
}
