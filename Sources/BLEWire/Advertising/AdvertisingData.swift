/// Advertising or scan response data: an ordered list of AD structures (Core Specification
/// Vol 3, Part C, 11). Decoding never fails: a structure whose length runs past the end becomes
/// a final `.malformed` entry, and a zero length octet ends the significant part (the rest is
/// padding, which `bytes` does not reproduce).
///
///     let ad = AdvertisingData(bytes: report.data)
///     print(ad.localName ?? "?", ad.serviceUUIDs, ad.manufacturerData.first?.companyID as Any)
public struct AdvertisingData: Hashable, Sendable {
    public var structures: [ADStructure]

    public init(_ structures: [ADStructure] = []) { self.structures = structures }

    /// Decodes `bytes`; never throws and never traps.
    public init(bytes: [UInt8]) {
        self.init(bytes: bytes[...])
    }

    /// Decodes `bytes`; never throws and never traps.
    public init(bytes: ArraySlice<UInt8>) {
        var out: [ADStructure] = []
        var i = bytes.startIndex
        let end = bytes.endIndex
        while i < end {
            let length = Int(bytes[i])
            if length == 0 { break }
            let available = end - i - 1
            if length > available {
                let type: UInt8 = available > 0 ? bytes[i + 1] : 0
                let data = available > 1 ? Array(bytes[(i + 2)..<end]) : []
                out.append(.malformed(type: type, data: data,
                                      reason: "length octet \(length) runs past the end: only \(available) byte\(available == 1 ? "" : "s") follow"))
                break
            }
            out.append(ADStructure(type: bytes[i + 1], payload: bytes[(i + 2)..<(i + 1 + length)]))
            i += 1 + length
        }
        structures = out
    }

    /// The encoded structures, in order.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        for s in structures { s.encode(into: &out) }
        return out
    }
}

/// Manufacturer Specific Data (Supplement, Part A, 1.4).
public struct ManufacturerSpecificData: Hashable, Sendable {
    /// Company identifier from Assigned Numbers (see `AssignedNumbers.companyName`).
    public var companyID: UInt16
    public var data: [UInt8]
    public init(companyID: UInt16, data: [UInt8]) { self.companyID = companyID; self.data = data }
}

extension AdvertisingData {
    /// The Complete Local Name if present, else the Shortened Local Name.
    public var localName: String? {
        var shortened: String?
        for s in structures {
            switch s {
            case .completeLocalName(let n): return n
            case .shortenedLocalName(let n): if shortened == nil { shortened = n }
            default: break
            }
        }
        return shortened
    }

    /// True when a Complete Local Name is present.
    public var isNameComplete: Bool {
        structures.contains { if case .completeLocalName = $0 { return true } else { return false } }
    }

    /// Every advertised service UUID (complete and incomplete lists, all widths), in order,
    /// without repeats. Solicitation lists are not included.
    public var serviceUUIDs: [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        func add(_ u: BluetoothUUID) { if !out.contains(u) { out.append(u) } }
        for s in structures {
            switch s {
            case .incompleteServiceUUIDs16(let l), .completeServiceUUIDs16(let l): l.forEach { add(BluetoothUUID(uuid16: $0)) }
            case .incompleteServiceUUIDs32(let l), .completeServiceUUIDs32(let l): l.forEach { add(BluetoothUUID(uuid32: $0)) }
            case .incompleteServiceUUIDs128(let l), .completeServiceUUIDs128(let l): l.forEach { add(BluetoothUUID(uuid128: $0)) }
            default: break
            }
        }
        return out
    }

    /// Service solicitation UUIDs (all widths), in order.
    public var solicitedServiceUUIDs: [BluetoothUUID] {
        structures.flatMap { s -> [BluetoothUUID] in
            switch s {
            case .serviceSolicitationUUIDs16(let l): return l.map { BluetoothUUID(uuid16: $0) }
            case .serviceSolicitationUUIDs32(let l): return l.map { BluetoothUUID(uuid32: $0) }
            case .serviceSolicitationUUIDs128(let l): return l.map { BluetoothUUID(uuid128: $0) }
            default: return []
            }
        }
    }

    /// Service data by service UUID (all widths); a later entry for the same UUID wins.
    public var serviceData: [BluetoothUUID: [UInt8]] {
        var out: [BluetoothUUID: [UInt8]] = [:]
        for s in structures {
            switch s {
            case .serviceData16(let u, let d): out[BluetoothUUID(uuid16: u)] = d
            case .serviceData32(let u, let d): out[BluetoothUUID(uuid32: u)] = d
            case .serviceData128(let u, let d): out[BluetoothUUID(uuid128: u)] = d
            default: break
            }
        }
        return out
    }

    /// Every Manufacturer Specific Data structure, in order.
    public var manufacturerData: [ManufacturerSpecificData] {
        structures.compactMap {
            if case .manufacturerSpecificData(let c, let d) = $0 { return ManufacturerSpecificData(companyID: c, data: d) }
            return nil
        }
    }

    /// TX Power Level in dBm.
    public var txPowerLevel: Int8? {
        for s in structures { if case .txPowerLevel(let p) = s { return p } }
        return nil
    }

    /// The Flags structure's bits.
    public var flags: AdvertisingFlags? {
        for s in structures { if case .flags(let f) = s { return f } }
        return nil
    }

    /// The Appearance value (category in bits 15-6, subcategory in bits 5-0); see
    /// `AssignedNumbers.appearanceName`.
    public var appearance: UInt16? {
        for s in structures { if case .appearance(let a) = s { return a } }
        return nil
    }

    /// The Advertising Interval (Vol 3, Part C, 11; Supplement, Part A, 1.15), from the
    /// 2-octet or 4-octet form, in 0.625 ms units on the air.
    ///
    ///     AdvertisingData(bytes: [0x03, 0x1A, 0x20, 0x00]).advertisingInterval   // 20 ms
    public var advertisingInterval: Duration? {
        for s in structures {
            switch s {
            case .advertisingInterval(let units): return HCITimeUnit.slot.duration(units)
            case .longAdvertisingInterval(let units): return HCITimeUnit.slot.duration(units)
            default: continue
            }
        }
        return nil
    }

    /// The Peripheral Connection Interval Range (Supplement, Part A, 1.9), in 1.25 ms units on
    /// the air; a bound the peripheral leaves open (0xFFFF) is nil.
    ///
    ///     AdvertisingData(bytes: [0x05, 0x12, 0x06, 0x00, 0x80, 0x0C]).peripheralConnectionIntervalRange   // 7.5 ms...4 s
    public var peripheralConnectionIntervalRange: (minimum: Duration?, maximum: Duration?)? {
        for s in structures {
            if case .peripheralConnectionIntervalRange(let lo, let hi) = s {
                func bound(_ units: UInt16) -> Duration? { units == 0xFFFF ? nil : HCITimeUnit.connectionInterval.duration(units) }
                return (bound(lo), bound(hi))
            }
        }
        return nil
    }
}
