import GATTClient
import SMP
import BLEWire

/// One attribute of the server's table (Core Spec 5.4, Vol 3, Part F, 3.2).
package struct ServerAttribute {
    package enum Kind {
        case service(end: UInt16)
        case include
        case characteristicDeclaration
        case value(characteristic: Int)
        case cccd(valueHandle: UInt16, properties: GATTCharacteristicProperties)
        case descriptor
    }
    package let handle: UInt16
    package let type: BluetoothUUID
    package var value: [UInt8]
    package let permissions: GATTDatabase.Permissions
    package let kind: Kind
    /// A Read Request is answered with `value` whatever the link: readable without security
    /// or authorization, stored (no read handler), the same for every client (not a CCCD or
    /// Client Supported Features). Set by `AttributeTable`.
    package var readsDirectly = false
}

/// The server's attribute table laid out from a `GATTDatabase`.
package struct AttributeTable {
    package var attributes: [ServerAttribute] = []
    /// Per characteristic value: its description (write rules, limits).
    package var characteristics: [GATTDatabase.Characteristic] = []
    package var serviceChangedHandle: UInt16?
    package var databaseHashHandle: UInt16?
    package var clientSupportedFeaturesHandle: UInt16?
    /// The Database Hash (Vol 3, Part G, 7.3) as read: AES-CMAC's 128-bit result, least
    /// significant octet first.
    package private(set) var hash: [UInt8] = []

    package init(_ db: GATTDatabase) {
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
                if c.uuid == GATTAttributeType.clientSupportedFeatures { clientSupportedFeaturesHandle = valueHandle }
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
        for i in attributes.indices { attributes[i].readsDirectly = readsDirectly(attributes[i]) }
        hash = databaseHash()
        if let hashHandle = databaseHashHandle, let i = index(of: hashHandle) {
            attributes[i].value = hash
        }
    }

    private func readsDirectly(_ a: ServerAttribute) -> Bool {
        guard a.permissions.contains(.read),
              a.permissions.isDisjoint(with: [.readEncrypted, .readAuthenticated, .readAuthorized, .fullKeySize]),
              a.handle != clientSupportedFeaturesHandle else { return false }
        switch a.kind {
        case .cccd: return false
        case .value(let c): return characteristics[c].onRead == nil
        default: return true
        }
    }

    static func uuidBytes(_ uuid: BluetoothUUID) -> [UInt8] {
        if let short = uuid.uuid16 { return [UInt8(truncatingIfNeeded: short), UInt8(truncatingIfNeeded: short >> 8)] }
        return uuid.as128.littleEndianBytes
    }

    package func index(of handle: UInt16) -> Int? {
        // Handles are dense from 1.
        let i = Int(handle) - 1
        return i >= 0 && i < attributes.count ? i : nil
    }

    /// The Database Hash (Vol 3, Part G, 7.3.1): AES-CMAC with key 0 over, in handle order,
    /// each service, include and characteristic declaration and Extended Properties
    /// descriptor as handle, type and value, and each User Description, CCCD, SCCD,
    /// Presentation Format and Aggregate Format descriptor as handle and type. 16 zero
    /// octets if libcrypto fails.
    package func databaseHash() -> [UInt8] {
        var m: [UInt8] = []
        for attr in attributes {
            guard let type = attr.type.uuid16 else { continue }
            switch type {
            case 0x2800, 0x2801, 0x2802, 0x2803, 0x2900:
                m.appendLE(attr.handle); m.appendLE(type); m += attr.value
            case 0x2901, 0x2902, 0x2903, 0x2904, 0x2905:
                m.appendLE(attr.handle); m.appendLE(type)
            default:
                continue
            }
        }
        guard let mac = try? AES.cmac(key: [UInt8](repeating: 0, count: 16), message: m) else { return [UInt8](repeating: 0, count: 16) }
        return mac.reversed()
    }
}
