import GATTClient

/// One attribute of the server's table (Core Spec 5.4, Vol 3, Part F, 3.2).
struct ServerAttribute {
    enum Kind {
        case service(end: UInt16)
        case include
        case characteristicDeclaration
        case value(characteristic: Int)
        case cccd(valueHandle: UInt16, properties: GATTCharacteristicProperties)
        case descriptor
    }
    let handle: UInt16
    let type: BluetoothUUID
    var value: [UInt8]
    let permissions: GATTDatabase.Permissions
    let kind: Kind
}

/// The server's attribute table laid out from a `GATTDatabase`.
struct AttributeTable {
    var attributes: [ServerAttribute] = []
    /// Per characteristic value: its description (write rules, limits).
    var characteristics: [GATTDatabase.Characteristic] = []
    var serviceChangedHandle: UInt16?
    var databaseHashHandle: UInt16?

    init(_ db: GATTDatabase) {
        let services = db.allServices
        // First pass: each service's handle range, for include declarations.
        var ranges: [(uuid: BluetoothUUID, start: UInt16, end: UInt16)] = []
        var next: UInt16 = 1
        for s in services {
            var count = 1 + s.includes.count
            for c in s.characteristics {
                count += 2 + c.descriptors.count
                if !c.properties.intersection([.notify, .indicate]).isEmpty { count += 1 }
            }
            ranges.append((s.uuid, next, next + UInt16(count) - 1))
            next += UInt16(count)
        }
        var h: UInt16 = 1
        for (i, s) in services.enumerated() {
            attributes.append(ServerAttribute(handle: h, type: s.isPrimary ? GATTAttributeType.primaryService : GATTAttributeType.secondaryService,
                                              value: Self.uuidBytes(s.uuid), permissions: [.read], kind: .service(end: ranges[i].end)))
            h += 1
            for inc in s.includes {
                guard let r = ranges.first(where: { $0.uuid == inc }) else { continue }
                var v: [UInt8] = []
                v.appendLE(r.start); v.appendLE(r.end)
                if let short = inc.uuid16 { v.appendLE(short) }
                attributes.append(ServerAttribute(handle: h, type: GATTAttributeType.include, value: v, permissions: [.read], kind: .include))
                h += 1
            }
            for c in s.characteristics {
                var decl: [UInt8] = [c.properties.rawValue]
                decl.appendLE(h + 1)
                decl += Self.uuidBytes(c.uuid)
                attributes.append(ServerAttribute(handle: h, type: GATTAttributeType.characteristic, value: decl, permissions: [.read], kind: .characteristicDeclaration))
                let valueHandle = h + 1
                attributes.append(ServerAttribute(handle: valueHandle, type: c.uuid, value: c.value, permissions: c.permissions,
                                                  kind: .value(characteristic: characteristics.count)))
                characteristics.append(c)
                if c.uuid == GATTAttributeType.serviceChanged { serviceChangedHandle = valueHandle }
                if c.uuid == GATTAttributeType.databaseHash { databaseHashHandle = valueHandle }
                h += 2
                if !c.properties.intersection([.notify, .indicate]).isEmpty {
                    attributes.append(ServerAttribute(handle: h, type: GATTAttributeType.clientCharacteristicConfiguration, value: [0, 0],
                                                      permissions: c.cccdPermissions, kind: .cccd(valueHandle: valueHandle, properties: c.properties)))
                    h += 1
                }
                for d in c.descriptors {
                    attributes.append(ServerAttribute(handle: h, type: d.uuid, value: d.value, permissions: d.permissions, kind: .descriptor))
                    h += 1
                }
            }
        }
        if let hashHandle = databaseHashHandle, let i = index(of: hashHandle) {
            attributes[i].value = databaseHash()
        }
    }

    static func uuidBytes(_ uuid: BluetoothUUID) -> [UInt8] {
        if let short = uuid.uuid16 { return [UInt8(truncatingIfNeeded: short), UInt8(truncatingIfNeeded: short >> 8)] }
        return uuid.as128.littleEndianBytes
    }

    func index(of handle: UInt16) -> Int? {
        // Handles are dense from 1.
        let i = Int(handle) - 1
        return i >= 0 && i < attributes.count ? i : nil
    }

    /// A 128-bit digest of the handles, types and declaration values (a stand-in for the
    /// AES-CMAC of Vol 3, Part G, 7.3.1: it changes whenever the structure changes).
    func databaseHash() -> [UInt8] {
        var a: UInt64 = 0xCBF2_9CE4_8422_2325, b: UInt64 = 0x8422_2325_CBF2_9CE4
        func mix(_ byte: UInt8) {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            b = (b ^ UInt64(byte) ^ (a >> 29)) &* 0x0000_0100_0000_01B3
        }
        for attr in attributes {
            mix(UInt8(truncatingIfNeeded: attr.handle)); mix(UInt8(truncatingIfNeeded: attr.handle >> 8))
            for x in attr.type.as128.littleEndianBytes { mix(x) }
            switch attr.kind {
            case .service, .include, .characteristicDeclaration: for x in attr.value { mix(x) }
            default: break
            }
        }
        var out: [UInt8] = []
        out.appendLE(a); out.appendLE(b)
        return out
    }
}
