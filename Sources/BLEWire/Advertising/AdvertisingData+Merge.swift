extension AdvertisingData {
    /// Merges `other` (typically the scan response, or a newer report from the same device)
    /// into this data. Singular fields take `other`'s value (the local name is one field,
    /// whether shortened or complete); manufacturer data is keyed by company, service data by
    /// UUID, unknown and malformed structures by AD type; UUID and address lists are united.
    /// Merging the same data again changes nothing, so per-device state stays bounded.
    ///
    ///     device.data = device.data.merging(AdvertisingData(bytes: scanResponse))
    public func merging(_ other: AdvertisingData) -> AdvertisingData {
        var result = structures
        for s in other.structures {
            let key = s.mergeSlot
            guard let i = result.firstIndex(where: { $0.mergeSlot == key }) else { result.append(s); continue }
            if let united = result[i].uniting(s) { result[i] = united } else { result[i] = s }
        }
        return AdvertisingData(result)
    }
}

/// Which field of merged data a structure fills.
enum ADMergeSlot: Hashable {
    case type(UInt8)
    case localName
    case manufacturer(UInt16)
    case serviceData(UInt128)
}

extension ADStructure {
    var mergeSlot: ADMergeSlot {
        switch self {
        case .shortenedLocalName, .completeLocalName: return .localName
        case .manufacturerSpecificData(let c, _): return .manufacturer(c)
        case .serviceData16(let u, _): return .serviceData(BluetoothUUID(uuid16: u).value)
        case .serviceData32(let u, _): return .serviceData(BluetoothUUID(uuid32: u).value)
        case .serviceData128(let u, _): return .serviceData(u)
        default: return .type(type)
        }
    }

    /// For list structures of the same kind: `self` followed by the elements of `other` it
    /// lacks (up to one structure's capacity). Nil for anything that is not a list of the same kind.
    func uniting(_ other: ADStructure) -> ADStructure? {
        // Capped at what one structure can carry (254 payload bytes), so a device that keeps
        // changing its lists cannot grow the merged data without bound.
        func union<T: Equatable>(_ a: [T], _ b: [T]) -> [T] {
            let cap = 254 / MemoryLayout<T>.size
            var out = a
            for x in b where out.count < cap && !out.contains(x) { out.append(x) }
            return out
        }
        switch (self, other) {
        case (.incompleteServiceUUIDs16(let a), .incompleteServiceUUIDs16(let b)): return .incompleteServiceUUIDs16(union(a, b))
        case (.completeServiceUUIDs16(let a), .completeServiceUUIDs16(let b)): return .completeServiceUUIDs16(union(a, b))
        case (.incompleteServiceUUIDs32(let a), .incompleteServiceUUIDs32(let b)): return .incompleteServiceUUIDs32(union(a, b))
        case (.completeServiceUUIDs32(let a), .completeServiceUUIDs32(let b)): return .completeServiceUUIDs32(union(a, b))
        case (.incompleteServiceUUIDs128(let a), .incompleteServiceUUIDs128(let b)): return .incompleteServiceUUIDs128(union(a, b))
        case (.completeServiceUUIDs128(let a), .completeServiceUUIDs128(let b)): return .completeServiceUUIDs128(union(a, b))
        case (.serviceSolicitationUUIDs16(let a), .serviceSolicitationUUIDs16(let b)): return .serviceSolicitationUUIDs16(union(a, b))
        case (.serviceSolicitationUUIDs32(let a), .serviceSolicitationUUIDs32(let b)): return .serviceSolicitationUUIDs32(union(a, b))
        case (.serviceSolicitationUUIDs128(let a), .serviceSolicitationUUIDs128(let b)): return .serviceSolicitationUUIDs128(union(a, b))
        case (.publicTargetAddress(let a), .publicTargetAddress(let b)): return .publicTargetAddress(union(a, b))
        case (.randomTargetAddress(let a), .randomTargetAddress(let b)): return .randomTargetAddress(union(a, b))
        default: return nil
        }
    }
}
