/// One advertising data structure: `length, AD type, payload` (Core Specification Vol 3,
/// Part C, 11; payload formats in Core Specification Supplement, Part A, 1).
///
/// Decoding is total: an unknown type becomes `.raw`, a known type whose payload breaks its
/// format becomes `.malformed`, and every case encodes back to the bytes it came from.
///
///     let s = ADStructure(type: 0x09, payload: Array("Sensor".utf8))  // .completeLocalName("Sensor")
///     s.encoded   // [0x07, 0x09, 0x53, 0x65, 0x6E, 0x73, 0x6F, 0x72]
public enum ADStructure: Hashable, Sendable {
    /// 0x01 Flags (1.3).
    case flags(AdvertisingFlags)
    /// 0x02 Incomplete List of 16-bit Service UUIDs (1.1).
    case incompleteServiceUUIDs16([UInt16])
    /// 0x03 Complete List of 16-bit Service UUIDs (1.1).
    case completeServiceUUIDs16([UInt16])
    /// 0x04 Incomplete List of 32-bit Service UUIDs (1.1).
    case incompleteServiceUUIDs32([UInt32])
    /// 0x05 Complete List of 32-bit Service UUIDs (1.1).
    case completeServiceUUIDs32([UInt32])
    /// 0x06 Incomplete List of 128-bit Service UUIDs (1.1).
    case incompleteServiceUUIDs128([UInt128])
    /// 0x07 Complete List of 128-bit Service UUIDs (1.1).
    case completeServiceUUIDs128([UInt128])
    /// 0x08 Shortened Local Name (1.2), valid UTF-8.
    case shortenedLocalName(String)
    /// 0x09 Complete Local Name (1.2), valid UTF-8.
    case completeLocalName(String)
    /// 0x0A TX Power Level in dBm (1.5).
    case txPowerLevel(Int8)
    /// 0xFF Manufacturer Specific Data (1.4): company identifier, then vendor bytes.
    case manufacturerSpecificData(companyID: UInt16, data: [UInt8])
    /// 0x16 Service Data - 16-bit UUID (1.11).
    case serviceData16(uuid: UInt16, data: [UInt8])
    /// 0x20 Service Data - 32-bit UUID (1.11).
    case serviceData32(uuid: UInt32, data: [UInt8])
    /// 0x21 Service Data - 128-bit UUID (1.11).
    case serviceData128(uuid: UInt128, data: [UInt8])
    /// 0x19 Appearance (1.12).
    case appearance(UInt16)
    /// 0x12 Peripheral Connection Interval Range in 1.25 ms units; 0xFFFF means no limit (1.9).
    case peripheralConnectionIntervalRange(min: UInt16, max: UInt16)
    /// 0x14 List of 16-bit Service Solicitation UUIDs (1.10).
    case serviceSolicitationUUIDs16([UInt16])
    /// 0x1F List of 32-bit Service Solicitation UUIDs (1.10).
    case serviceSolicitationUUIDs32([UInt32])
    /// 0x15 List of 128-bit Service Solicitation UUIDs (1.10).
    case serviceSolicitationUUIDs128([UInt128])
    /// 0x17 Public Target Address (1.13).
    case publicTargetAddress([BluetoothAddress])
    /// 0x18 Random Target Address (1.14).
    case randomTargetAddress([BluetoothAddress])
    /// 0x1A Advertising Interval in 0.625 ms units (1.15).
    case advertisingInterval(UInt16)
    /// 0x2F Advertising Interval - long, 4-octet form, in 0.625 ms units (1.15).
    /// The 3-octet form decodes as `.raw` so it re-encodes unchanged.
    case longAdvertisingInterval(UInt32)
    /// 0x1B LE Bluetooth Device Address (1.16): the address and the type octet, whose bit 0 is
    /// set for a random address (other bits are reserved, kept so the structure re-encodes).
    case leBluetoothDeviceAddress(BluetoothAddress, typeOctet: UInt8)
    /// 0x1C LE Role (1.17): 0 peripheral only, 1 central only, 2 peripheral preferred,
    /// 3 central preferred.
    case leRole(UInt8)
    /// 0x24 URI (1.18): the first character is the scheme code from Assigned Numbers.
    case uri(String)
    /// 0x27 LE Supported Features (1.19): the feature bit mask, trailing zero octets may be omitted.
    case leSupportedFeatures([UInt8])
    /// A type this decoder does not interpret.
    case raw(type: UInt8, data: [UInt8])
    /// A known type whose payload does not follow its format; `reason` says how.
    case malformed(type: UInt8, data: [UInt8], reason: String)

    /// Decodes one structure from its AD type and payload (the bytes after the type).
    public init(type: UInt8, payload: ArraySlice<UInt8>) {
        self = ADStructure.decode(type: type, payload)
    }

    /// Decodes one structure from its AD type and payload (the bytes after the type).
    public init(type: UInt8, payload: [UInt8]) {
        self = ADStructure.decode(type: type, payload[...])
    }

    /// The AD type code this structure is sent with.
    public var type: UInt8 {
        switch self {
        case .flags: return ADType.flags
        case .incompleteServiceUUIDs16: return ADType.incompleteServiceUUIDs16
        case .completeServiceUUIDs16: return ADType.completeServiceUUIDs16
        case .incompleteServiceUUIDs32: return ADType.incompleteServiceUUIDs32
        case .completeServiceUUIDs32: return ADType.completeServiceUUIDs32
        case .incompleteServiceUUIDs128: return ADType.incompleteServiceUUIDs128
        case .completeServiceUUIDs128: return ADType.completeServiceUUIDs128
        case .shortenedLocalName: return ADType.shortenedLocalName
        case .completeLocalName: return ADType.completeLocalName
        case .txPowerLevel: return ADType.txPowerLevel
        case .manufacturerSpecificData: return ADType.manufacturerSpecificData
        case .serviceData16: return ADType.serviceData16
        case .serviceData32: return ADType.serviceData32
        case .serviceData128: return ADType.serviceData128
        case .appearance: return ADType.appearance
        case .peripheralConnectionIntervalRange: return ADType.peripheralConnectionIntervalRange
        case .serviceSolicitationUUIDs16: return ADType.serviceSolicitationUUIDs16
        case .serviceSolicitationUUIDs32: return ADType.serviceSolicitationUUIDs32
        case .serviceSolicitationUUIDs128: return ADType.serviceSolicitationUUIDs128
        case .publicTargetAddress: return ADType.publicTargetAddress
        case .randomTargetAddress: return ADType.randomTargetAddress
        case .advertisingInterval: return ADType.advertisingInterval
        case .longAdvertisingInterval: return ADType.advertisingIntervalLong
        case .leBluetoothDeviceAddress: return ADType.leBluetoothDeviceAddress
        case .leRole: return ADType.leRole
        case .uri: return ADType.uri
        case .leSupportedFeatures: return ADType.leSupportedFeatures
        case .raw(let type, _), .malformed(let type, _, _): return type
        }
    }

    /// The payload bytes (everything after the AD type octet).
    public var payload: [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .flags(let f): out.append(f.rawValue)
        case .incompleteServiceUUIDs16(let l), .completeServiceUUIDs16(let l), .serviceSolicitationUUIDs16(let l):
            out.reserveCapacity(l.count * 2)
            for u in l { out.appendLE(u) }
        case .incompleteServiceUUIDs32(let l), .completeServiceUUIDs32(let l), .serviceSolicitationUUIDs32(let l):
            out.reserveCapacity(l.count * 4)
            for u in l { out.appendLE(u) }
        case .incompleteServiceUUIDs128(let l), .completeServiceUUIDs128(let l), .serviceSolicitationUUIDs128(let l):
            out.reserveCapacity(l.count * 16)
            for u in l { out.appendLE128(u) }
        case .shortenedLocalName(let s), .completeLocalName(let s), .uri(let s): out.append(contentsOf: s.utf8)
        case .txPowerLevel(let p): out.appendLE(p)
        case .manufacturerSpecificData(let company, let data): out.appendLE(company); out.append(contentsOf: data)
        case .serviceData16(let uuid, let data): out.appendLE(uuid); out.append(contentsOf: data)
        case .serviceData32(let uuid, let data): out.appendLE(uuid); out.append(contentsOf: data)
        case .serviceData128(let uuid, let data): out.appendLE128(uuid); out.append(contentsOf: data)
        case .appearance(let a): out.appendLE(a)
        case .peripheralConnectionIntervalRange(let lo, let hi): out.appendLE(lo); out.appendLE(hi)
        case .publicTargetAddress(let l), .randomTargetAddress(let l): for a in l { out.appendLE(a) }
        case .advertisingInterval(let i): out.appendLE(i)
        case .longAdvertisingInterval(let i): out.appendLE(i)
        case .leBluetoothDeviceAddress(let a, let t): out.appendLE(a); out.append(t)
        case .leRole(let r): out.append(r)
        case .leSupportedFeatures(let f): out = f
        case .raw(_, let data), .malformed(_, let data, _): out = data
        }
        return out
    }

    /// The structure on the wire: length octet (type + payload), type octet, payload.
    /// A length octet can express at most 254 payload bytes: a longer payload (only possible in a
    /// structure built by hand, never in a decoded one) is cut to 254.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    /// Appends the encoded structure to `out`.
    public func encode(into out: inout [UInt8]) {
        let p = payload.prefix(254)
        out.append(UInt8(truncatingIfNeeded: p.count + 1))
        out.append(type)
        out.append(contentsOf: p)
    }
}

extension Array where Element == UInt8 {
    mutating func appendLE128(_ v: UInt128) {
        for i in 0..<16 { append(UInt8(truncatingIfNeeded: v >> (8 * UInt128(i)))) }
    }
}
