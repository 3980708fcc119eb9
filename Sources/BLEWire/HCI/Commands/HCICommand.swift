/// Builders for HCI command packets, grouped by specification section in the files of this
/// folder. Each returns the packet exactly as the Core Specification's parameter table lays it out.
///
///     let packet = HCICommand.leSetScanEnable(LESetScanEnable(enable: true, filterDuplicates: true))
public enum HCICommand {
    /// A command without parameters.
    @inlinable
    static func bare(_ opcode: UInt16) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: opcode))
    }

    /// A command whose only parameter is a Connection_Handle.
    @inlinable
    static func handleOnly(_ opcode: UInt16, _ handle: UInt16) -> HCICommandPacket {
        var p: [UInt8] = []
        p.reserveCapacity(2)
        p.appendLE(handle)
        return HCICommandPacket(opcode: HCIOpcode(rawValue: opcode), parameters: p)
    }
}

/// The parameters of one HCI command: encodes to and decodes from the command's parameter bytes.
///
///     let params = try LESetScanParameters(parameters: packet.parameters)
public protocol HCICommandParameters: Hashable, Sendable {
    /// The command's opcode.
    static var opcode: HCIOpcode { get }
    /// Decodes the parameter bytes of a command packet; every byte must be accounted for.
    init(parameters: [UInt8]) throws(DecodeError)
    /// Appends the parameter bytes.
    func encode(into out: inout [UInt8])
}

extension HCICommandParameters {
    /// The parameter bytes.
    public var parameters: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    /// The complete command packet.
    public var packet: HCICommandPacket { HCICommandPacket(opcode: Self.opcode, parameters: parameters) }
}

extension ByteReader {
    /// A boolean parameter: 0x00 or 0x01; anything else is an invalid value.
    @inlinable
    mutating func bool(_ field: String) throws(DecodeError) -> Bool {
        let v = try u8()
        guard v <= 1 else { throw .invalidValue(what: "\(context)", field: field, value: Int(v)) }
        return v == 1
    }

    /// A 128-bit little-endian value (keys).
    @inlinable
    mutating func u128() throws(DecodeError) -> UInt128 {
        let low = try u64()
        let high = try u64()
        return UInt128(high) << 64 | UInt128(low)
    }
}

extension Array where Element == UInt8 {
    /// Appends a 128-bit value little-endian (keys).
    @inlinable
    package mutating func appendLE(_ v: UInt128) {
        appendLE(UInt64(truncatingIfNeeded: v))
        appendLE(UInt64(truncatingIfNeeded: v >> 64))
    }
}

/// Connection parameters shared by LE Create Connection, LE Extended Create Connection,
/// LE Connection Update and LE Remote Connection Parameter Request Reply (Vol 4, Part E, 7.8.12).
/// Intervals in 1.25 ms units, timeout in 10 ms units, CE lengths in 0.625 ms units.
public struct LEConnectionParameters: Hashable, Sendable {
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var maxLatency: UInt16
    public var supervisionTimeout: UInt16
    public var minCELength: UInt16
    public var maxCELength: UInt16

    @inlinable
    public init(intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16 = 0, supervisionTimeout: UInt16,
                minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }

    init(_ r: inout ByteReader) throws(DecodeError) {
        intervalMin = try r.u16()
        intervalMax = try r.u16()
        maxLatency = try r.u16()
        supervisionTimeout = try r.u16()
        minCELength = try r.u16()
        maxCELength = try r.u16()
    }

    func encode(into out: inout [UInt8]) {
        out.appendLE(intervalMin); out.appendLE(intervalMax); out.appendLE(maxLatency)
        out.appendLE(supervisionTimeout); out.appendLE(minCELength); out.appendLE(maxCELength)
    }
}
