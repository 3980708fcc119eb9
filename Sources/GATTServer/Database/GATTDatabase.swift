import GATTClient
import BLEWire
import ATT

/// The description of a peripheral's attribute database, from which `GATTServer`
/// lays out handles the way a real server does (Core Spec 5.4, Vol 3, Part G, 3): each
/// service declaration, its include declarations, then each characteristic's declaration,
/// value, CCCD (when it notifies or indicates) and other descriptors. With `deviceName`
/// a Generic Access service comes first; with `includesGATTService` a Generic Attribute
/// service follows with Service Changed and Database Hash (and, with `robustCaching`,
/// Client Supported Features).
///
///     let db = GATTDatabase(services: [.init(uuid: BluetoothUUID("180F")!, characteristics: [
///         .init(uuid: BluetoothUUID("2A19")!, properties: [.read, .notify], value: [100])])])
public struct GATTDatabase: Sendable {
    /// Access rules of an attribute (Vol 3, Part F, 3.2.5).
    public struct Permissions: OptionSet, Sendable, Hashable {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let read = Permissions(rawValue: 0x01)
        public static let write = Permissions(rawValue: 0x02)
        /// Reading needs an encrypted link (else Insufficient Encryption).
        public static let readEncrypted = Permissions(rawValue: 0x04)
        public static let writeEncrypted = Permissions(rawValue: 0x08)
        /// Reading needs an authenticated link (else Insufficient Authentication).
        public static let readAuthenticated = Permissions(rawValue: 0x10)
        public static let writeAuthenticated = Permissions(rawValue: 0x20)
        /// Reading and writing need an encryption key of 16 octets (else Encryption Key Size
        /// Too Short, 0x0C; Insufficient Encryption on an unencrypted link).
        public static let fullKeySize = Permissions(rawValue: 0x40)
        /// Reading needs the server's `authorize` to allow the peer (else Insufficient Authorization).
        public static let readAuthorized = Permissions(rawValue: 0x80)
        public static let writeAuthorized = Permissions(rawValue: 0x100)
    }

    public struct Descriptor: Sendable {
        public var uuid: BluetoothUUID
        public var value: [UInt8]
        public var permissions: Permissions
        public init(uuid: BluetoothUUID, value: [UInt8], permissions: Permissions = [.read]) {
            self.uuid = uuid; self.value = value; self.permissions = permissions
        }
        /// A Characteristic User Description (0x2901).
        public static func userDescription(_ text: String) -> Descriptor {
            Descriptor(uuid: GATTAttributeType.userDescription, value: Array(text.utf8))
        }
        /// A Characteristic Presentation Format (0x2904; Vol 3, Part G, 3.3.3.5): the format
        /// (0x04 uint8, 0x06 uint16, 0x0E sint16, 0x19 utf8s, ...), the base-10 exponent, the
        /// unit UUID (0x27AD percentage), the name space (0x01 Bluetooth SIG) and description.
        public static func presentationFormat(format: UInt8, exponent: Int8 = 0, unit: UInt16, namespace: UInt8 = 0x01,
                                              description: UInt16 = 0) -> Descriptor {
            Descriptor(uuid: BluetoothUUID(uuid16: 0x2904),
                       value: [format, UInt8(bitPattern: exponent), UInt8(truncatingIfNeeded: unit), UInt8(truncatingIfNeeded: unit >> 8),
                               namespace, UInt8(truncatingIfNeeded: description), UInt8(truncatingIfNeeded: description >> 8)])
        }
        /// A Characteristic Extended Properties descriptor (0x2900; Vol 3, Part G, 3.3.3.1):
        /// bit 0 Reliable Write, bit 1 Writable Auxiliaries.
        public static func extendedProperties(reliableWrite: Bool = false, writableAuxiliaries: Bool = false) -> Descriptor {
            Descriptor(uuid: GATTAttributeType.extendedProperties, value: [(reliableWrite ? 1 : 0) | (writableAuxiliaries ? 2 : 0), 0])
        }
    }

    public struct Characteristic: Sendable {
        public var uuid: BluetoothUUID
        public var properties: GATTCharacteristicProperties
        public var permissions: Permissions
        public var value: [UInt8]
        public var descriptors: [Descriptor]
        /// The longest value a write may leave (Invalid Attribute Value Length beyond).
        public var maximumLength: Int
        /// When set, only these values may be written; others fail with `rejectWith`.
        public var acceptedWrites: [[UInt8]]?
        public var rejectWith: ATTErrorCode
        /// The permissions of the CCCD (when the characteristic notifies or indicates); a
        /// server may require encryption to subscribe (`[.read, .writeEncrypted]`).
        public var cccdPermissions: Permissions
        /// Serves the value instead of `value` when set: called for every read of it, with
        /// the requesting peer; an ATT error code refuses the read.
        public var onRead: GATTReadHandler?
        /// Decides every write of the value when set (before it is stored): nil accepts it,
        /// an ATT error code refuses it.
        public var onWrite: GATTWriteHandler?

        /// Permissions default to what the properties imply (read, write).
        public init(uuid: BluetoothUUID, properties: GATTCharacteristicProperties, permissions: Permissions? = nil,
                    value: [UInt8] = [], descriptors: [Descriptor] = [], maximumLength: Int = 512,
                    acceptedWrites: [[UInt8]]? = nil, rejectWith: ATTErrorCode = ATTErrorCode(0x80),
                    cccdPermissions: Permissions = [.read, .write], onRead: GATTReadHandler? = nil, onWrite: GATTWriteHandler? = nil) {
            self.uuid = uuid; self.properties = properties
            var implied: Permissions = []
            if properties.contains(.read) { implied.insert(.read) }
            if !properties.intersection([.write, .writeWithoutResponse, .authenticatedSignedWrites]).isEmpty { implied.insert(.write) }
            self.permissions = permissions ?? implied
            self.value = value; self.descriptors = descriptors; self.maximumLength = maximumLength
            self.acceptedWrites = acceptedWrites; self.rejectWith = rejectWith
            self.cccdPermissions = cccdPermissions
            self.onRead = onRead; self.onWrite = onWrite
        }
    }

    public struct Service: Sendable {
        public var uuid: BluetoothUUID
        public var isPrimary: Bool
        /// UUIDs of services (in this database) that this one includes.
        public var includes: [BluetoothUUID]
        public var characteristics: [Characteristic]
        public init(uuid: BluetoothUUID, isPrimary: Bool = true, includes: [BluetoothUUID] = [], characteristics: [Characteristic]) {
            self.uuid = uuid; self.isPrimary = isPrimary; self.includes = includes; self.characteristics = characteristics
        }
    }

    public var services: [Service]
    /// Adds a Generic Access service (Device Name 0x2A00, Appearance 0x2A01) first.
    public var deviceName: String?
    public var appearance: UInt16
    /// Adds a Generic Attribute service with Service Changed and Database Hash.
    public var includesGATTService: Bool
    /// Adds Client Supported Features (0x2B29) to the Generic Attribute service: clients that
    /// enable robust caching get Database Out Of Sync while they are change-unaware
    /// (Vol 3, Part G, 2.5.2.1).
    public var robustCaching: Bool
    /// When not empty, adds Server Supported Features (0x2B3A, Vol 3, Part G, 7.4) with these
    /// bits to the Generic Attribute service, after the others: `.enhancedATTBearer` tells
    /// clients that look for it before opening EATT bearers that `serve` accepts them.
    public var serverFeatures: GATTServerFeatures

    public init(services: [Service], deviceName: String? = nil, appearance: UInt16 = 0, includesGATTService: Bool = true,
                robustCaching: Bool = false, serverFeatures: GATTServerFeatures = []) {
        self.services = services; self.deviceName = deviceName; self.appearance = appearance
        self.includesGATTService = includesGATTService; self.robustCaching = robustCaching
        self.serverFeatures = serverFeatures
    }

    /// The services in handle order, the GAP and GATT services included.
    package var allServices: [Service] {
        var all: [Service] = []
        if let deviceName {
            all.append(Service(uuid: GATTAttributeType.genericAccessService, characteristics: [
                Characteristic(uuid: BluetoothUUID(uuid16: 0x2A00), properties: [.read], value: Array(deviceName.utf8)),
                Characteristic(uuid: BluetoothUUID(uuid16: 0x2A01), properties: [.read],
                               value: [UInt8(truncatingIfNeeded: appearance), UInt8(truncatingIfNeeded: appearance >> 8)]),
            ]))
        }
        if includesGATTService {
            var gatt: [Characteristic] = [
                Characteristic(uuid: GATTAttributeType.serviceChanged, properties: [.indicate], permissions: [], value: [0, 0, 0, 0]),
                Characteristic(uuid: GATTAttributeType.databaseHash, properties: [.read], value: []),
            ]
            if robustCaching {
                gatt.append(Characteristic(uuid: GATTAttributeType.clientSupportedFeatures, properties: [.read, .write], value: [0]))
            }
            if !serverFeatures.isEmpty {
                gatt.append(Characteristic(uuid: GATTAttributeType.serverSupportedFeatures, properties: [.read], value: [serverFeatures.rawValue]))
            }
            all.append(Service(uuid: GATTAttributeType.genericAttributeService, characteristics: gatt))
        }
        return all + services
    }
}
