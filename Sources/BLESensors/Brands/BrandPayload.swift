import BLECore
import BLEWire

/// Reads of fixed-layout brand payloads. Each decoder checks the payload's length once against
/// its layout, then reads fields at offsets inside it; the brands mix byte orders, so both are
/// here (`ByteReader` reads little-endian streams).
extension Array where Element == UInt8 {
    @inline(__always) func le16(_ i: Int) -> UInt16 { UInt16(self[i]) | UInt16(self[i + 1]) << 8 }
    @inline(__always) func be16(_ i: Int) -> UInt16 { UInt16(self[i]) << 8 | UInt16(self[i + 1]) }
    @inline(__always) func le16s(_ i: Int) -> Int { Int(Int16(bitPattern: le16(i))) }
    @inline(__always) func be16s(_ i: Int) -> Int { Int(Int16(bitPattern: be16(i))) }
    @inline(__always) func be24(_ i: Int) -> UInt32 { UInt32(self[i]) << 16 | UInt32(self[i + 1]) << 8 | UInt32(self[i + 2]) }
    @inline(__always) func be32(_ i: Int) -> UInt32 { UInt32(be16(i)) << 16 | UInt32(be16(i + 2)) }
    @inline(__always) func le32(_ i: Int) -> UInt32 { UInt32(le16(i)) | UInt32(le16(i + 2)) << 16 }
}

/// Values in their decimal units: an integer count of tenths becomes `count / 10` exactly as the
/// literal would (division rounds once; multiplying by 0.1 would not).
@inline(__always) func scaled(_ count: Int, _ divisor: Double) -> JSONValue { .double(Double(count) / divisor) }

extension SensorAdvertisement {
    /// Whether the report or the scan response lists the 16-bit service UUID `uuid16`.
    func advertises(uuid16: UInt16) -> Bool {
        let uuid = BluetoothUUID(uuid16: uuid16)
        return data.serviceUUIDs.contains(uuid) || scanResponse.serviceUUIDs.contains(uuid)
    }
}

extension SensorDecodeError {
    /// A payload whose length is not the layout's.
    static func length(_ format: String, _ what: String, expected: String, got: Int) -> SensorDecodeError {
        SensorDecodeError(format: format, reason: "\(what) needs \(expected) byte\(expected == "1" ? "" : "s"), got \(got)")
    }
}
