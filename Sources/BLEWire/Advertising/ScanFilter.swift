/// Which advertising reports a scan keeps. Every set criterion must hold; an empty filter
/// matches everything.
///
/// - `services`: any one of them appears in a service UUID list (complete or incomplete) or
///   as a service data UUID, in any width: `180D` matches `0000180D-0000-1000-8000-00805F9B34FB`.
/// - `nameContains`: a substring of the shortened or complete local name, ignoring ASCII case.
/// - `minimumRSSI`: the report's RSSI is at least this (dBm).
/// - `manufacturerID`: a Manufacturer Specific Data structure carries this company identifier.
///
///     let f = ScanFilter(services: [BluetoothUUID("180D")!], minimumRSSI: -80)
///     if f.matches(advertisingData: report.data, rssi: report.rssi) { ... }
///
/// Matching walks the raw bytes once without allocating (see `ADStructureIterator`).
public struct ScanFilter: Sendable, Hashable {
    public var services: [BluetoothUUID] { didSet { prepareServices() } }
    public var nameContains: String? { didSet { prepareName() } }
    public var minimumRSSI: Int8?
    public var manufacturerID: UInt16?

    /// 16-bit aliases of `services` that have one.
    @usableFromInline var services16: [UInt16] = []
    /// 32-bit aliases of SIG-derived `services`.
    @usableFromInline var services32: [UInt32] = []
    /// Full values of all `services`.
    @usableFromInline var services128: [UInt128] = []
    /// `nameContains` as UTF-8 with ASCII letters lowercased; empty when there is no name criterion.
    @usableFromInline var needle: [UInt8] = []

    public init(services: [BluetoothUUID] = [], nameContains: String? = nil,
                minimumRSSI: Int8? = nil, manufacturerID: UInt16? = nil) {
        self.services = services
        self.nameContains = nameContains
        self.minimumRSSI = minimumRSSI
        self.manufacturerID = manufacturerID
        prepareServices()
        prepareName()
    }

    /// A filter that keeps every report.
    public static let all = ScanFilter()

    /// True when no criterion is set.
    public var isEmpty: Bool { services.isEmpty && needle.isEmpty && minimumRSSI == nil && manufacturerID == nil }

    private mutating func prepareServices() {
        services128 = services.map(\.value)
        services16 = services.compactMap(\.uuid16)
        services32 = services.compactMap { $0.isSIGDerived ? UInt32(truncatingIfNeeded: $0.value >> 96) : nil }
    }

    private mutating func prepareName() {
        needle = (nameContains ?? "").utf8.map(ScanFilter.asciiLower)
    }

    @inlinable @inline(__always)
    static func asciiLower(_ b: UInt8) -> UInt8 { b &- 0x41 < 26 ? b | 0x20 : b }

    /// Whether a report with these advertising data bytes and RSSI passes.
    @inlinable
    public func matches(advertisingData bytes: [UInt8], rssi: Int8) -> Bool {
        bytes.withUnsafeBytes { matches(advertisingData: $0, rssi: rssi) }
    }

    /// Whether a report passes, decided from `buffer[range]` in place.
    @inlinable
    public func matches(advertisingData buffer: UnsafeRawBufferPointer, range: Range<Int>? = nil, rssi: Int8) -> Bool {
        if let m = minimumRSSI, rssi < m { return false }
        var needService = !services128.isEmpty
        var needName = !needle.isEmpty
        var needManufacturer = manufacturerID != nil
        if !needService && !needName && !needManufacturer { return true }
        var it = ADStructureIterator(buffer, range: range)
        while let s = it.next() {
            let p = s.payload
            switch s.type {
            case ADType.incompleteServiceUUIDs16, ADType.completeServiceUUIDs16:
                if needService, contains16(buffer, p) { needService = false }
            case ADType.serviceData16:
                if needService, p.count >= 2, contains16(buffer, p.lowerBound..<p.lowerBound + 2) { needService = false }
            case ADType.incompleteServiceUUIDs32, ADType.completeServiceUUIDs32:
                if needService, contains32(buffer, p) { needService = false }
            case ADType.serviceData32:
                if needService, p.count >= 4, contains32(buffer, p.lowerBound..<p.lowerBound + 4) { needService = false }
            case ADType.incompleteServiceUUIDs128, ADType.completeServiceUUIDs128:
                if needService, contains128(buffer, p) { needService = false }
            case ADType.serviceData128:
                if needService, p.count >= 16, contains128(buffer, p.lowerBound..<p.lowerBound + 16) { needService = false }
            case ADType.shortenedLocalName, ADType.completeLocalName:
                if needName, containsNeedle(buffer, p) { needName = false }
            case ADType.manufacturerSpecificData:
                if needManufacturer, p.count >= 2,
                   UInt16(buffer[p.lowerBound]) | UInt16(buffer[p.lowerBound + 1]) << 8 == manufacturerID {
                    needManufacturer = false
                }
            default:
                break
            }
            if !needService && !needName && !needManufacturer { return true }
        }
        return false
    }

    /// Whether decoded data and an RSSI pass; the same rules as the byte form.
    public func matches(_ data: AdvertisingData, rssi: Int8) -> Bool {
        matches(advertisingData: data.bytes, rssi: rssi)
    }

    @inlinable
    func contains16(_ b: UnsafeRawBufferPointer, _ p: Range<Int>) -> Bool {
        var i = p.lowerBound
        while i + 2 <= p.upperBound {
            let u = UInt16(b[i]) | UInt16(b[i + 1]) << 8
            if services16.contains(u) { return true }
            i += 2
        }
        return false
    }

    @inlinable
    func contains32(_ b: UnsafeRawBufferPointer, _ p: Range<Int>) -> Bool {
        var i = p.lowerBound
        while i + 4 <= p.upperBound {
            let u = UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
            if services32.contains(u) { return true }
            i += 4
        }
        return false
    }

    @inlinable
    func contains128(_ b: UnsafeRawBufferPointer, _ p: Range<Int>) -> Bool {
        var i = p.lowerBound
        while i + 16 <= p.upperBound {
            let lo = UInt64(littleEndian: b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let hi = UInt64(littleEndian: b.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self))
            if services128.contains(UInt128(hi) << 64 | UInt128(lo)) { return true }
            i += 16
        }
        return false
    }

    @inlinable
    func containsNeedle(_ b: UnsafeRawBufferPointer, _ p: Range<Int>) -> Bool {
        let m = needle.count
        guard m <= p.count else { return false }
        return needle.withUnsafeBufferPointer { n in
            var start = p.lowerBound
            while start + m <= p.upperBound {
                var k = 0
                while k < m, ScanFilter.asciiLower(b[start + k]) == n[k] { k += 1 }
                if k == m { return true }
                start += 1
            }
            return false
        }
    }
}
