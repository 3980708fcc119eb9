/// Payload decoding for `ADStructure`, following the formats of Core Specification
/// Supplement, Part A, 1. Never traps: every bad payload becomes `.malformed`.
extension ADStructure {
    static func decode(type: UInt8, _ p: ArraySlice<UInt8>) -> ADStructure {
        let n = p.count
        func bad(_ reason: String) -> ADStructure { .malformed(type: type, data: Array(p), reason: reason) }

        switch type {
        case ADType.flags:
            guard n == 1, let f = p.first else { return bad("Flags: payload is \(n) bytes, expected 1") }
            return .flags(AdvertisingFlags(rawValue: f))
        case ADType.incompleteServiceUUIDs16, ADType.completeServiceUUIDs16, ADType.serviceSolicitationUUIDs16:
            guard n % 2 == 0 else { return bad("16-bit UUID list: length \(n) is not a multiple of 2") }
            let l = stride(from: p.startIndex, to: p.endIndex, by: 2).map { p.le16($0) }
            switch type {
            case ADType.incompleteServiceUUIDs16: return .incompleteServiceUUIDs16(l)
            case ADType.completeServiceUUIDs16: return .completeServiceUUIDs16(l)
            default: return .serviceSolicitationUUIDs16(l)
            }
        case ADType.incompleteServiceUUIDs32, ADType.completeServiceUUIDs32, ADType.serviceSolicitationUUIDs32:
            guard n % 4 == 0 else { return bad("32-bit UUID list: length \(n) is not a multiple of 4") }
            let l = stride(from: p.startIndex, to: p.endIndex, by: 4).map { p.le32($0) }
            switch type {
            case ADType.incompleteServiceUUIDs32: return .incompleteServiceUUIDs32(l)
            case ADType.completeServiceUUIDs32: return .completeServiceUUIDs32(l)
            default: return .serviceSolicitationUUIDs32(l)
            }
        case ADType.incompleteServiceUUIDs128, ADType.completeServiceUUIDs128, ADType.serviceSolicitationUUIDs128:
            guard n % 16 == 0 else { return bad("128-bit UUID list: length \(n) is not a multiple of 16") }
            let l = stride(from: p.startIndex, to: p.endIndex, by: 16).map { p.le128($0) }
            switch type {
            case ADType.incompleteServiceUUIDs128: return .incompleteServiceUUIDs128(l)
            case ADType.completeServiceUUIDs128: return .completeServiceUUIDs128(l)
            default: return .serviceSolicitationUUIDs128(l)
            }
        case ADType.shortenedLocalName, ADType.completeLocalName, ADType.uri:
            guard let s = String(validating: p, as: UTF8.self) else {
                return bad("text is not valid UTF-8")
            }
            switch type {
            case ADType.shortenedLocalName: return .shortenedLocalName(s)
            case ADType.completeLocalName: return .completeLocalName(s)
            default: return .uri(s)
            }
        case ADType.txPowerLevel:
            guard n == 1, let v = p.first else { return bad("TX Power Level: payload is \(n) bytes, expected 1") }
            return .txPowerLevel(Int8(bitPattern: v))
        case ADType.manufacturerSpecificData:
            guard n >= 2 else { return bad("Manufacturer Specific Data: \(n) bytes, needs a 2-byte company identifier") }
            return .manufacturerSpecificData(companyID: p.le16(p.startIndex), data: Array(p.dropFirst(2)))
        case ADType.serviceData16:
            guard n >= 2 else { return bad("Service Data 16: \(n) bytes, needs a 2-byte UUID") }
            return .serviceData16(uuid: p.le16(p.startIndex), data: Array(p.dropFirst(2)))
        case ADType.serviceData32:
            guard n >= 4 else { return bad("Service Data 32: \(n) bytes, needs a 4-byte UUID") }
            return .serviceData32(uuid: p.le32(p.startIndex), data: Array(p.dropFirst(4)))
        case ADType.serviceData128:
            guard n >= 16 else { return bad("Service Data 128: \(n) bytes, needs a 16-byte UUID") }
            return .serviceData128(uuid: p.le128(p.startIndex), data: Array(p.dropFirst(16)))
        case ADType.appearance:
            guard n == 2 else { return bad("Appearance: payload is \(n) bytes, expected 2") }
            return .appearance(p.le16(p.startIndex))
        case ADType.peripheralConnectionIntervalRange:
            guard n == 4 else { return bad("Peripheral Connection Interval Range: payload is \(n) bytes, expected 4") }
            return .peripheralConnectionIntervalRange(min: p.le16(p.startIndex), max: p.le16(p.startIndex + 2))
        case ADType.publicTargetAddress, ADType.randomTargetAddress:
            guard n % 6 == 0, n > 0 else { return bad("target address list: length \(n) is not a non-zero multiple of 6") }
            let l = stride(from: p.startIndex, to: p.endIndex, by: 6).map { p.address($0) }
            return type == ADType.publicTargetAddress ? .publicTargetAddress(l) : .randomTargetAddress(l)
        case ADType.advertisingInterval:
            guard n == 2 else { return bad("Advertising Interval: payload is \(n) bytes, expected 2") }
            return .advertisingInterval(p.le16(p.startIndex))
        case ADType.advertisingIntervalLong:
            if n == 4 { return .longAdvertisingInterval(p.le32(p.startIndex)) }
            if n == 3 { return .raw(type: type, data: Array(p)) }
            return bad("Advertising Interval - long: payload is \(n) bytes, expected 3 or 4")
        case ADType.leBluetoothDeviceAddress:
            guard n == 7 else { return bad("LE Bluetooth Device Address: payload is \(n) bytes, expected 7") }
            return .leBluetoothDeviceAddress(p.address(p.startIndex), typeOctet: p[p.startIndex + 6])
        case ADType.leRole:
            guard n == 1, let r = p.first else { return bad("LE Role: payload is \(n) bytes, expected 1") }
            return .leRole(r)
        case ADType.leSupportedFeatures:
            return .leSupportedFeatures(Array(p))
        default:
            return .raw(type: type, data: Array(p))
        }
    }
}

extension ArraySlice where Element == UInt8 {
    // Callers check the length first; indices are absolute slice indices.
    func le16(_ i: Int) -> UInt16 { UInt16(self[i]) | UInt16(self[i + 1]) << 8 }
    func le32(_ i: Int) -> UInt32 {
        UInt32(self[i]) | UInt32(self[i + 1]) << 8 | UInt32(self[i + 2]) << 16 | UInt32(self[i + 3]) << 24
    }
    func le128(_ i: Int) -> UInt128 {
        var v: UInt128 = 0
        for k in 0..<16 { v |= UInt128(self[i + k]) << (8 * UInt128(k)) }
        return v
    }
    func address(_ i: Int) -> BluetoothAddress {
        var v: UInt64 = 0
        for k in 0..<6 { v |= UInt64(self[i + k]) << (8 * UInt64(k)) }
        return BluetoothAddress(rawValue: v)
    }
}
