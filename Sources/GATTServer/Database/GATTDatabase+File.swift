import GATTClient
import BLEWire

/// Why a database description could not be read; the text names the service and
/// characteristic (by index from 0) and the field.
public struct GATTDatabaseFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where: `services[1].characteristics[0].properties`.
    public let path: String
    public let problem: String
    package init(path: String, problem: String) { self.path = path; self.problem = problem }
    public var description: String { "\(path): \(problem)" }
}

extension GATTDatabase {
    /// A database from a parsed description file (`ble serve DB.yaml|DB.json`):
    ///
    ///     services:
    ///       - uuid: 180F
    ///         characteristics:
    ///           - uuid: 2A19
    ///             properties: [read, notify]
    ///             value: "hex:64"
    ///
    /// Top level: `services` (required), `deviceName`, `appearance`, `robustCaching`. A
    /// service: `uuid`, `primary` (default true), `includes` (UUIDs), `characteristics`. A
    /// characteristic: `uuid`, `properties` (named as `ble inspect --json` names them: read,
    /// write, writeWithoutResponse, notify, indicate, authenticatedSignedWrites, broadcast,
    /// extendedProperties), `permissions` (read, write, readEncrypted, writeEncrypted,
    /// readAuthenticated, writeAuthenticated, readAuthorized, writeAuthorized, fullKeySize;
    /// from the properties when absent), `value` (text as UTF-8, or `hex:0102`),
    /// `description` (a User Description), `maximumLength`. Any other key is an error.
    public init(tree: JSONValue) throws(GATTDatabaseFileError) {
        let top = try Self.object(tree, "database", keys: ["services", "deviceName", "appearance", "robustCaching"])
        guard case .array(let services)? = top["services"] else { throw GATTDatabaseFileError(path: "services", problem: "missing, or not a list") }
        guard services.count <= 256 else { throw GATTDatabaseFileError(path: "services", problem: "more than 256 services") }
        var parsed: [Service] = []
        for (i, s) in services.enumerated() {
            parsed.append(try Self.service(s, path: "services[\(i)]"))
        }
        var deviceName: String?
        if let v = top["deviceName"] {
            guard case .string(let name) = v else { throw GATTDatabaseFileError(path: "deviceName", problem: "not text") }
            deviceName = name
        }
        var appearance: UInt16 = 0
        if let v = top["appearance"] {
            guard case .int(let n) = v, let a = UInt16(exactly: n) else { throw GATTDatabaseFileError(path: "appearance", problem: "not a number 0...65535") }
            appearance = a
        }
        var robust = false
        if let v = top["robustCaching"] {
            guard case .bool(let b) = v else { throw GATTDatabaseFileError(path: "robustCaching", problem: "not true or false") }
            robust = b
        }
        self.init(services: parsed, deviceName: deviceName, appearance: appearance, robustCaching: robust)
        let handles = allServices.reduce(0) { n, s in
            n + 1 + s.includes.count + s.characteristics.reduce(0) { $0 + 2 + $1.descriptors.count + ($1.properties.intersection([.notify, .indicate]).isEmpty ? 0 : 1) }
        }
        guard handles <= 0xFFFF else { throw GATTDatabaseFileError(path: "services", problem: "\(handles) attributes, more than the 65535 handles") }
    }

    private static func service(_ tree: JSONValue, path: String) throws(GATTDatabaseFileError) -> Service {
        let s = try object(tree, path, keys: ["uuid", "primary", "includes", "characteristics"])
        let uuid = try Self.uuid(s["uuid"], path: path + ".uuid")
        var primary = true
        if let v = s["primary"] {
            guard case .bool(let b) = v else { throw GATTDatabaseFileError(path: path + ".primary", problem: "not true or false") }
            primary = b
        }
        var includes: [BluetoothUUID] = []
        if let v = s["includes"] {
            guard case .array(let list) = v else { throw GATTDatabaseFileError(path: path + ".includes", problem: "not a list") }
            for (i, item) in list.enumerated() { includes.append(try Self.uuid(item, path: path + ".includes[\(i)]")) }
        }
        var characteristics: [Characteristic] = []
        if let v = s["characteristics"] {
            guard case .array(let list) = v else { throw GATTDatabaseFileError(path: path + ".characteristics", problem: "not a list") }
            for (i, c) in list.enumerated() { characteristics.append(try characteristic(c, path: path + ".characteristics[\(i)]")) }
        }
        return Service(uuid: uuid, isPrimary: primary, includes: includes, characteristics: characteristics)
    }

    private static func characteristic(_ tree: JSONValue, path: String) throws(GATTDatabaseFileError) -> Characteristic {
        let c = try object(tree, path, keys: ["uuid", "properties", "permissions", "value", "maximumLength", "description"])
        let uuid = try Self.uuid(c["uuid"], path: path + ".uuid")
        var properties: GATTCharacteristicProperties = []
        for name in try names(c["properties"], path: path + ".properties") {
            guard let p = propertyNames[name] else {
                throw GATTDatabaseFileError(path: path + ".properties", problem: "unknown property '\(name)' (one of \(propertyNames.keys.sorted().joined(separator: ", ")))")
            }
            properties.insert(p)
        }
        var permissions: Permissions?
        if c["permissions"] != nil {
            var set: Permissions = []
            for name in try names(c["permissions"], path: path + ".permissions") {
                guard let p = permissionNames[name] else {
                    throw GATTDatabaseFileError(path: path + ".permissions", problem: "unknown permission '\(name)' (one of \(permissionNames.keys.sorted().joined(separator: ", ")))")
                }
                set.insert(p)
            }
            permissions = set
        }
        var value: [UInt8] = []
        if let v = c["value"] { value = try Self.value(v, path: path + ".value") }
        var maximumLength = 512
        if let v = c["maximumLength"] {
            guard case .int(let n) = v, (0...512).contains(n) else { throw GATTDatabaseFileError(path: path + ".maximumLength", problem: "not a number 0...512") }
            maximumLength = n
        }
        guard value.count <= maximumLength else {
            throw GATTDatabaseFileError(path: path + ".value", problem: "\(value.count) octets, longer than the \(maximumLength) allowed")
        }
        var descriptors: [Descriptor] = []
        if let v = c["description"] {
            guard case .string(let text) = v, text.utf8.count <= 512 else { throw GATTDatabaseFileError(path: path + ".description", problem: "not text of at most 512 octets") }
            descriptors.append(.userDescription(text))
        }
        return Characteristic(uuid: uuid, properties: properties, permissions: permissions, value: value, descriptors: descriptors,
                              maximumLength: maximumLength)
    }

    static let propertyNames: [String: GATTCharacteristicProperties] = [
        "broadcast": .broadcast, "read": .read, "writeWithoutResponse": .writeWithoutResponse, "write": .write,
        "notify": .notify, "indicate": .indicate, "authenticatedSignedWrites": .authenticatedSignedWrites,
        "extendedProperties": .extendedProperties,
    ]

    static let permissionNames: [String: Permissions] = [
        "read": .read, "write": .write, "readEncrypted": .readEncrypted, "writeEncrypted": .writeEncrypted,
        "readAuthenticated": .readAuthenticated, "writeAuthenticated": .writeAuthenticated,
        "readAuthorized": .readAuthorized, "writeAuthorized": .writeAuthorized, "fullKeySize": .fullKeySize,
    ]

    /// The members of a mapping at `path`; a key outside `keys` (a misspelt one would otherwise
    /// be ignored silently) is an error naming it.
    private static func object(_ tree: JSONValue, _ path: String, keys: [String]) throws(GATTDatabaseFileError) -> [String: JSONValue] {
        guard case .object(let members) = tree else { throw GATTDatabaseFileError(path: path, problem: "not a mapping") }
        var out: [String: JSONValue] = [:]
        for (k, v) in members where out[k] == nil {
            guard keys.contains(k) else {
                let place = path == "database" ? k : path + "." + k
                throw GATTDatabaseFileError(path: place, problem: "unknown key (one of \(keys.sorted().joined(separator: ", ")))")
            }
            out[k] = v
        }
        return out
    }

    private static func uuid(_ tree: JSONValue?, path: String) throws(GATTDatabaseFileError) -> BluetoothUUID {
        guard let tree else { throw GATTDatabaseFileError(path: path, problem: "missing") }
        let text: String
        switch tree {
        case .string(let s): text = s
        // YAML and JSON read a 16-bit UUID such as 2902 as a number.
        case .int(let n): text = String(n)
        default: throw GATTDatabaseFileError(path: path, problem: "not a UUID")
        }
        guard let uuid = BluetoothUUID(text) else { throw GATTDatabaseFileError(path: path, problem: "'\(text)' is not a UUID (180F or 0000180F-0000-1000-8000-00805F9B34FB)") }
        return uuid
    }

    private static func names(_ tree: JSONValue?, path: String) throws(GATTDatabaseFileError) -> [String] {
        guard let tree else { return [] }
        guard case .array(let list) = tree else { throw GATTDatabaseFileError(path: path, problem: "not a list of names") }
        var out: [String] = []
        for item in list {
            guard case .string(let s) = item else { throw GATTDatabaseFileError(path: path, problem: "not a list of names") }
            out.append(s)
        }
        return out
    }

    private static func value(_ tree: JSONValue, path: String) throws(GATTDatabaseFileError) -> [UInt8] {
        guard case .string(let text) = tree else { throw GATTDatabaseFileError(path: path, problem: "not text (write numbers as \"hex:64\")") }
        guard text.hasPrefix("hex:") else { return Array(text.utf8) }
        guard let bytes = [UInt8](hex: String(text.dropFirst(4))) else { throw GATTDatabaseFileError(path: path, problem: "'\(text)' is not hex") }
        return bytes
    }
}
