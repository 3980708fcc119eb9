/// Which way a captured packet travelled.
public enum PacketDirection: Sendable, Hashable, CustomStringConvertible {
    /// Host to controller.
    case sent
    /// Controller to host.
    case received

    public var description: String { self == .sent ? "host>controller" : "controller>host" }
}

/// One record of a btsnoop capture: an HCI packet, its direction and time.
public struct BTSnoopRecord: Sendable, Hashable {
    public var direction: PacketDirection
    /// Microseconds since 0000-01-01 00:00 (btsnoop epoch).
    public var timestamp: Int64
    public var packet: HCIPacket
    /// Cumulative dropped packets as the writer recorded them.
    public var drops: UInt32

    public init(direction: PacketDirection, timestamp: Int64, packet: HCIPacket, drops: UInt32 = 0) {
        self.direction = direction
        self.timestamp = timestamp
        self.packet = packet
        self.drops = drops
    }

    /// Microseconds between the btsnoop epoch and 1970-01-01.
    public static let unixEpochOffset: Int64 = 0x00DC_DDB3_0F2F_8000
}

/// Datalink types of btsnoop files (the "btsnoop" format from RFC 1761's snoop).
public enum BTSnoopDatalink: UInt32, Sendable {
    /// H4 with the packet indicator byte first.
    case h4 = 1002
    /// Linux monitor (btmon) format: opcode in the flags field.
    case linuxMonitor = 2001
}
