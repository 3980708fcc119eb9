#if canImport(Glibc)
import Glibc
#endif

/// Encodes btsnoop (datalink 1002, H4) files that open in `tshark -r` and `btmon -r`.
///
///     var bytes = BTSnoopEncoder.header
///     BTSnoopEncoder.append(record, to: &bytes)
public enum BTSnoopEncoder {
    public static var header: [UInt8] {
        var out = Array("btsnoop\0".utf8)
        out.appendBE(UInt32(1))
        out.appendBE(BTSnoopDatalink.h4.rawValue)
        return out
    }

    /// Appends one H4 record. Flags: bit 0 = received, bit 1 = command or event.
    public static func append(_ record: BTSnoopRecord, to out: inout [UInt8]) {
        let h4 = record.packet.h4
        var flags: UInt32 = record.direction == .received ? 1 : 0
        if record.packet.type == .command || record.packet.type == .event { flags |= 2 }
        out.appendBE(UInt32(h4.count))
        out.appendBE(UInt32(h4.count))
        out.appendBE(flags)
        out.appendBE(record.drops)
        out.appendBE(UInt64(bitPattern: record.timestamp))
        out.append(contentsOf: h4)
    }

    /// Now, in btsnoop microseconds.
    public static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000 + BTSnoopRecord.unixEpochOffset
    }
}

extension Array where Element == UInt8 {
    @inlinable mutating func appendBE(_ v: UInt32) { appendLE(v.byteSwapped) }
    @inlinable mutating func appendBE(_ v: UInt64) { appendLE(v.byteSwapped) }
}
