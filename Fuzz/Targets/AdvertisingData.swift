import BLEWire

/// Advertising data (Vol 3, Part C, 11; Supplement, Part A, 1). Input: one selector byte
/// for the scan filter, then the AD bytes. Properties:
/// - `AdvertisingData(bytes:)` and the non-allocating `ADStructureIterator` see the same
///   structures (type and payload), in order;
/// - the decoded data re-encodes to the significant part of the input (up to a zero length
///   octet or a structure that runs past the end, which decodes as a final `.malformed`);
/// - `ScanFilter.matches` on the raw bytes agrees with the same criteria checked on the
///   decoded structures, whenever every structure is well formed.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.u8()
    let bytes = input.rest()
    let ad = AdvertisingData(bytes: bytes)

    var spans: [ADStructureSpan] = []
    var stop = 0
    bytes.withUnsafeBytes { raw in
        var it = ADStructureIterator(raw)
        while let s = it.next() { spans.append(s); stop = s.payload.upperBound }
        fuzzCheck(it.offset == raw.count, "iterator did not run to the end")
    }
    let overran = stop < bytes.count && bytes[stop] != 0
    fuzzCheck(ad.structures.count == spans.count + (overran ? 1 : 0), "decoder and iterator count different structures")
    for (s, span) in zip(ad.structures, spans) {
        fuzzCheck(s.type == bytes[span.payload.lowerBound - 1] && s.payload == Array(bytes[span.payload]),
                  "decoded structure \(s) differs from the bytes the iterator found")
    }
    var expected = Array(bytes[..<stop])
    if overran, let last = ad.structures.last {
        guard case .malformed = last else { fuzzCheck(false, "a structure past the end did not decode as malformed"); return 0 }
        expected = Array(bytes[..<stop])
        fuzzCheck(AdvertisingData(Array(ad.structures.dropLast())).bytes == expected, "re-encoding changed the bytes")
    } else {
        fuzzCheck(ad.bytes == expected, "re-encoding changed the bytes")
    }

    // Accessors never trap.
    _ = (ad.localName, ad.isNameComplete, ad.serviceUUIDs, ad.solicitedServiceUUIDs, ad.serviceData,
         ad.manufacturerData, ad.txPowerLevel, ad.flags, ad.appearance)

    let filter = makeFilter(selector, bytes)
    let rssi = Int8(bitPattern: selector &* 37)
    let raw = filter.matches(advertisingData: bytes, rssi: rssi)
    let wellFormed = !ad.structures.contains { if case .malformed = $0 { return true } else { return false } }
    if wellFormed {
        fuzzCheck(raw == reference(filter, ad, rssi: rssi), "ScanFilter.matches disagrees with the decoded data")
    }
    return 0
}

/// A filter whose criteria come from the selector bits and, to hit matches, from the data.
private func makeFilter(_ selector: UInt8, _ bytes: [UInt8]) -> ScanFilter {
    var services: [BluetoothUUID] = []
    if selector & 1 != 0 {
        let u = UInt16(bytes.count > 3 ? bytes[2] : 0) | UInt16(bytes.count > 3 ? bytes[3] : 0) << 8
        services = [BluetoothUUID(uuid16: u), BluetoothUUID(uuid16: 0x180D)]
    }
    if selector & 2 != 0 { services.append(BluetoothUUID(uuid32: 0x0000_FEAA)) }
    let name: String? = selector & 4 != 0 ? (selector & 8 != 0 ? "ab" : "Sensor") : nil
    let rssi: Int8? = selector & 16 != 0 ? -70 : nil
    let manufacturer: UInt16? = selector & 32 != 0 ? (selector & 64 != 0 ? 0x004C : 0x0059) : nil
    return ScanFilter(services: services, nameContains: name, minimumRSSI: rssi, manufacturerID: manufacturer)
}

/// The filter's rules applied to decoded structures.
private func reference(_ f: ScanFilter, _ ad: AdvertisingData, rssi: Int8) -> Bool {
    if let m = f.minimumRSSI, rssi < m { return false }
    if !f.services.isEmpty {
        let present = Set(ad.serviceUUIDs).union(ad.serviceData.keys)
        guard f.services.contains(where: present.contains) else { return false }
    }
    if let needle = f.nameContains, !needle.isEmpty {
        let lower = Array(needle.utf8).map(asciiLower)
        let found = ad.structures.contains { s in
            switch s {
            case .shortenedLocalName(let n), .completeLocalName(let n):
                let hay = Array(n.utf8).map(asciiLower)
                guard hay.count >= lower.count else { return false }
                return (0...(hay.count - lower.count)).contains { Array(hay[$0..<$0 + lower.count]) == lower }
            default:
                return false
            }
        }
        guard found else { return false }
    }
    if let id = f.manufacturerID {
        guard ad.manufacturerData.contains(where: { $0.companyID == id }) else { return false }
    }
    return true
}

private func asciiLower(_ b: UInt8) -> UInt8 { (0x41...0x5A).contains(b) ? b | 0x20 : b }
