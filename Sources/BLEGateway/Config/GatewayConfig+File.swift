import BLECore
import BLESensors
import FoundationEssentials
import BLEWire
import BLETransport

extension GatewayConfig {
    /// The largest config file read (1 MiB): a config is a few kilobytes, so a larger file is
    /// a wrong path, not a config.
    public static let maximumFileSize = 1 << 20

    /// Reads a JSON config file (keys in docs/gateway.md). Unknown keys, wrong types and bad
    /// values are errors naming the key.
    ///
    ///     let config = try GatewayConfig.load(path: "/etc/ble-gateway.json")
    public static func load(path: String) throws(ConfigError) -> GatewayConfig {
        let bytes: [UInt8]
        do { bytes = try FileBytes.read(path, atMost: maximumFileSize + 1) } catch {
            throw ConfigError(key: "--config", "cannot read \(path): \(error.reason); check the path and its permissions")
        }
        guard bytes.count <= maximumFileSize else {
            throw ConfigError(key: "--config", "\(path) is larger than \(maximumFileSize) bytes; a config file is a few kilobytes")
        }
        return try decode(Data(bytes))
    }

    /// Decodes the JSON text of a config file.
    public static func decode(_ data: Data) throws(ConfigError) -> GatewayConfig {
        do {
            return try JSONDecoder().decode(FileRoot.self, from: data).config
        } catch let error as ConfigError {
            throw error
        } catch let DecodingError.keyNotFound(key, context) {
            throw ConfigError(key: keyPath(context.codingPath + [key]), "missing")
        } catch let DecodingError.typeMismatch(type, context) {
            throw ConfigError(key: keyPath(context.codingPath), "expected \(typeName(type))")
        } catch let DecodingError.valueNotFound(type, context) {
            throw ConfigError(key: keyPath(context.codingPath), "expected \(typeName(type)), got null")
        } catch let DecodingError.dataCorrupted(context) {
            if context.codingPath.isEmpty {
                throw ConfigError(key: "(file)", "not valid JSON: \(JSONSyntax.firstError(in: Array(data))?.description ?? context.debugDescription)")
            }
            throw ConfigError(key: keyPath(context.codingPath), context.debugDescription)
        } catch {
            throw ConfigError(key: "(file)", "\(error)")
        }
    }

    static func keyPath(_ path: [any CodingKey]) -> String {
        var out = ""
        for k in path {
            if let i = k.intValue { out += "[\(i)]" } else { out += out.isEmpty ? k.stringValue : ".\(k.stringValue)" }
        }
        return out.isEmpty ? "(file)" : out
    }

    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Int.Type, is Double.Type: return "a number"
        case is [Any].Type: return "a list"
        default:
            let name = "\(type)"
            return name.hasPrefix("Array") ? "a list" : name.hasPrefix("Dictionary") ? "an object" : "an object"
        }
    }
}

/// A coding key for any name: lists the keys a JSON object actually has.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Throws for keys not in `known`, naming the first one.
func rejectUnknownKeys(_ decoder: any Decoder, _ known: [String]) throws {
    let c = try decoder.container(keyedBy: AnyKey.self)
    for k in c.allKeys where !known.contains(k.stringValue) {
        throw ConfigError(key: GatewayConfig.keyPath(decoder.codingPath + [k]), "unknown key; known here: \(known.joined(separator: ", "))")
    }
}

func seconds(_ value: Double?, _ path: [any CodingKey], _ key: String, positive: Bool = true) throws -> Duration? {
    guard let value else { return nil }
    if !value.isFinite || value < 0 || (positive && value == 0) || value > 1e9 {
        throw ConfigError(key: GatewayConfig.keyPath(path + [AnyKey(stringValue: key)]), "must be a number of seconds more than 0, got \(value)")
    }
    return .nanoseconds(Int64(value * 1e9))
}

extension GatewayConfig {
    /// Every key of the file except those inside `devices` entries ("mqtt.url", "devices"):
    /// what docs/gateway.md's flag table lists.
    static var fileKeys: [String] {
        FileRoot.K.allCases.flatMap { k -> [String] in
            switch k {
            case .mqtt: FileBroker.K.allCases.map { "mqtt.\($0.rawValue)" }
            case .scan: FileScan.K.allCases.map { "scan.\($0.rawValue)" }
            case .fleet: FileFleet.K.allCases.map { "fleet.\($0.rawValue)" }
            default: [k.rawValue]
            }
        }
    }
}

private struct FileRoot: Decodable {
    var config = GatewayConfig()
    enum K: String, CodingKey, CaseIterable { case mqtt, id, topicPrefix, layout, scan, metricsIntervalSeconds, homeAssistantDiscovery, devices, keys, fleet }

    init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, K.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: K.self)
        if let m = try c.decodeIfPresent(FileBroker.self, forKey: .mqtt) { config.broker = m.broker }
        config.id = try c.decodeIfPresent(String.self, forKey: .id)
        if let p = try c.decodeIfPresent(String.self, forKey: .topicPrefix) { config.topicPrefix = p }
        if let l = try c.decodeIfPresent(String.self, forKey: .layout) {
            guard let layout = GatewayConfig.Layout(rawValue: l) else {
                throw ConfigError(key: "layout", "\"\(l)\" is not one of \(GatewayConfig.Layout.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            config.layout = layout
        }
        if let s = try c.decodeIfPresent(FileScan.self, forKey: .scan) { config.scan = s.scan }
        if let m = try seconds(c.decodeIfPresent(Double.self, forKey: .metricsIntervalSeconds), c.codingPath, "metricsIntervalSeconds") { config.metricsInterval = m }
        if let h = try c.decodeIfPresent(Bool.self, forKey: .homeAssistantDiscovery) { config.homeAssistantDiscovery = h }
        if let d = try c.decodeIfPresent([FileDevice].self, forKey: .devices) { config.devices = d.map(\.device) }
        if let k = try c.decodeIfPresent([String: String].self, forKey: .keys) { config.keys = try GatewayConfig.sensorKeys(k) }
        if let f = try c.decodeIfPresent(FileFleet.self, forKey: .fleet) { config.fleet = f.fleet }
    }
}

private struct FileFleet: Decodable {
    var fleet: GatewayConfig.Fleet
    enum K: String, CodingKey, CaseIterable { case name, slots, awaySeconds, claimDelaySeconds, graceSeconds }

    init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, K.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: K.self)
        fleet = GatewayConfig.Fleet(name: try c.decode(String.self, forKey: .name))
        if let s = try c.decodeIfPresent(Int.self, forKey: .slots) { fleet.slots = s }
        if let a = try seconds(c.decodeIfPresent(Double.self, forKey: .awaySeconds), c.codingPath, "awaySeconds") { fleet.away = a }
        if let d = try seconds(c.decodeIfPresent(Double.self, forKey: .claimDelaySeconds), c.codingPath, "claimDelaySeconds") { fleet.claimDelay = d }
        if let g = try seconds(c.decodeIfPresent(Double.self, forKey: .graceSeconds), c.codingPath, "graceSeconds", positive: false) { fleet.grace = g }
    }
}

private struct FileBroker: Decodable {
    var broker = GatewayConfig.Broker()
    enum K: String, CodingKey, CaseIterable {
        case url, protocolVersion, username, password, passwordFile, caFile, certFile, keyFile, insecureTLS, queueCapacity, keepAliveSeconds, reconnectDelaySeconds, reconnectMaximumDelaySeconds
    }

    init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, K.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: K.self)
        if let u = try c.decodeIfPresent(String.self, forKey: .url) {
            do { _ = try BrokerURL(u) } catch { throw error }
            broker.url = u
        }
        if c.contains(.protocolVersion) {
            // "3.1.1" or "5" (the number 5 too).
            let text: String
            if let n = try? c.decode(Int.self, forKey: .protocolVersion) { text = String(n) } else { text = try c.decode(String.self, forKey: .protocolVersion) }
            guard let version = MQTTProtocolVersion(rawValue: text) else {
                throw ConfigError(key: "mqtt.protocolVersion", "\"\(text)\" is not \"3.1.1\" or \"5\"")
            }
            broker.protocolVersion = version
        }
        broker.username = try c.decodeIfPresent(String.self, forKey: .username)
        broker.password = try c.decodeIfPresent(String.self, forKey: .password)
        broker.passwordFile = try c.decodeIfPresent(String.self, forKey: .passwordFile)
        broker.caFile = try c.decodeIfPresent(String.self, forKey: .caFile)
        broker.certFile = try c.decodeIfPresent(String.self, forKey: .certFile)
        broker.keyFile = try c.decodeIfPresent(String.self, forKey: .keyFile)
        if let i = try c.decodeIfPresent(Bool.self, forKey: .insecureTLS) { broker.insecureTLS = i }
        if let q = try c.decodeIfPresent(Int.self, forKey: .queueCapacity) {
            guard q >= 1 else { throw ConfigError(key: "mqtt.queueCapacity", "must be at least 1, got \(q)") }
            broker.queueCapacity = q
        }
        if let k = try seconds(c.decodeIfPresent(Double.self, forKey: .keepAliveSeconds), c.codingPath, "keepAliveSeconds") { broker.keepAlive = k }
        if let r = try seconds(c.decodeIfPresent(Double.self, forKey: .reconnectDelaySeconds), c.codingPath, "reconnectDelaySeconds") { broker.reconnectDelay = r }
        if let r = try seconds(c.decodeIfPresent(Double.self, forKey: .reconnectMaximumDelaySeconds), c.codingPath, "reconnectMaximumDelaySeconds") { broker.reconnectMaximumDelay = r }
    }
}

private struct FileScan: Decodable {
    var scan = GatewayConfig.Scan()
    enum K: String, CodingKey, CaseIterable { case enabled, passive, publishIntervalSeconds, lostAfterSeconds, acceptCounterRestart }

    init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, K.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: K.self)
        if let e = try c.decodeIfPresent(Bool.self, forKey: .enabled) { scan.enabled = e }
        if let p = try c.decodeIfPresent(Bool.self, forKey: .passive) { scan.passive = p }
        if let i = try seconds(c.decodeIfPresent(Double.self, forKey: .publishIntervalSeconds), c.codingPath, "publishIntervalSeconds", positive: false) { scan.publishInterval = i }
        if let l = try seconds(c.decodeIfPresent(Double.self, forKey: .lostAfterSeconds), c.codingPath, "lostAfterSeconds") { scan.lostAfter = l }
        if let r = try c.decodeIfPresent(Bool.self, forKey: .acceptCounterRestart) { scan.acceptCounterRestart = r }
    }
}

private struct FileCharacteristic: Decodable {
    var ref: GatewayConfig.CharacteristicRef
    var interval: Duration?
    enum K: String, CodingKey, CaseIterable { case service, characteristic, intervalSeconds }

    init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, K.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: K.self)
        let s = try c.decode(String.self, forKey: .service)
        let ch = try c.decode(String.self, forKey: .characteristic)
        guard let service = BluetoothUUID(s) else {
            throw ConfigError(key: GatewayConfig.keyPath(c.codingPath + [K.service]), "\"\(s)\" is not a UUID (\"180F\" or the 36-character form)")
        }
        guard let characteristic = BluetoothUUID(ch) else {
            throw ConfigError(key: GatewayConfig.keyPath(c.codingPath + [K.characteristic]), "\"\(ch)\" is not a UUID (\"2A19\" or the 36-character form)")
        }
        ref = GatewayConfig.CharacteristicRef(service: service, characteristic: characteristic)
        interval = try seconds(c.decodeIfPresent(Double.self, forKey: .intervalSeconds), c.codingPath, "intervalSeconds")
    }
}

private struct FileDevice: Decodable {
    var device: GatewayConfig.Device
    enum K: String, CodingKey, CaseIterable { case address, addressType, subscribe, read, reconnect, security }
    static let levels: [(String, SecurityLevel)] = [("encrypted", .encrypted), ("authenticated", .authenticated), ("secureConnections", .secureConnections)]
    enum R: String, CodingKey, CaseIterable { case maxAttempts, initialDelaySeconds, maximumDelaySeconds }

    init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, K.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: K.self)
        let text = try c.decode(String.self, forKey: .address)
        let typeText = try c.decodeIfPresent(String.self, forKey: .addressType) ?? "random"
        let type: LEAddressType
        switch typeText {
        case "public": type = .public
        case "random": type = .random
        default: throw ConfigError(key: GatewayConfig.keyPath(c.codingPath + [K.addressType]), "\"\(typeText)\" is not public or random")
        }
        guard let address = LEAddress(text, type: type) else {
            throw ConfigError(key: GatewayConfig.keyPath(c.codingPath + [K.address]), "\"\(text)\" is not an address like C0:11:22:33:44:55")
        }
        device = GatewayConfig.Device(address: address)
        if let s = try c.decodeIfPresent(String.self, forKey: .security) {
            guard let level = Self.levels.first(where: { $0.0 == s })?.1 else {
                throw ConfigError(key: GatewayConfig.keyPath(c.codingPath + [K.security]), "\"\(s)\" is not one of \(Self.levels.map(\.0).joined(separator: ", "))")
            }
            device.security = level
        }
        device.subscribe = try c.decodeIfPresent([FileCharacteristic].self, forKey: .subscribe)?.map(\.ref) ?? []
        let reads = try c.decodeIfPresent([FileCharacteristic].self, forKey: .read) ?? []
        for (i, r) in reads.enumerated() {
            guard let interval = r.interval else {
                throw ConfigError(key: GatewayConfig.keyPath(c.codingPath + [K.read]) + "[\(i)].intervalSeconds", "missing")
            }
            device.read.append(GatewayConfig.PeriodicRead(characteristic: r.ref, interval: interval))
        }
        if c.contains(.reconnect) {
            let r = try c.superDecoder(forKey: .reconnect)
            try rejectUnknownKeys(r, R.allCases.map(\.rawValue))
            let rc = try r.container(keyedBy: R.self)
            if let m = try rc.decodeIfPresent(Int.self, forKey: .maxAttempts) {
                guard m >= 0 else { throw ConfigError(key: GatewayConfig.keyPath(rc.codingPath + [R.maxAttempts]), "must not be negative") }
                device.reconnect.maxAttempts = m
            }
            if let i = try seconds(rc.decodeIfPresent(Double.self, forKey: .initialDelaySeconds), rc.codingPath, "initialDelaySeconds") { device.reconnect.initialDelay = i }
            if let m = try seconds(rc.decodeIfPresent(Double.self, forKey: .maximumDelaySeconds), rc.codingPath, "maximumDelaySeconds") { device.reconnect.maximumDelay = m }
        }
    }
}

extension GatewayConfig {
    /// `"keys": {"A4:C1:38:00:00:01": "32 hex digits"}`: the bindkeys by address. A bad address or
    /// a key that is not 16 bytes is an error naming the device, never showing the key.
    static func sensorKeys(_ text: [String: String]) throws(ConfigError) -> SensorKeys {
        var keys: [BluetoothAddress: [UInt8]] = [:]
        for (addressText, hex) in text.sorted(by: { $0.key < $1.key }) {
            guard let address = BluetoothAddress(addressText) else {
                throw ConfigError(key: "keys.\(addressText)", "is not an address like A4:C1:38:00:00:01")
            }
            guard let key = bytes(fromHex: hex), key.count == 16 else {
                throw ConfigError(key: "keys.\(addressText)", "the key of \(address) must be 16 bytes written as 32 hex digits")
            }
            if keys.updateValue(key, forKey: address) != nil {
                throw ConfigError(key: "keys.\(addressText)", "\(address) has two keys")
            }
        }
        return SensorKeys(keys)
    }
}
