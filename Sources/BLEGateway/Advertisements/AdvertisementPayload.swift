import BLECore
import BLESensors
import BLEWire

/// The JSON message of one advertising device, and its `lost` message.
public enum AdvertisementPayload {
    /// `{"address":..,"addressType":..,"state":"present","name":..,"rssi":..,"txPower":..,
    /// "connectable":..,"services":[..],"manufacturerData":{"004C":"hex"},"serviceData":{"180F":"hex"},
    /// "brand":..,"model":..,"decoded":{..}}`; absent fields are left out. `decoding` is what the
    /// gateway's ``SensorDecoder`` made of the advertisement.
    public static func present(_ p: DiscoveredPeripheral, decoding: SensorDecoding) -> JSONValue {
        present(address: p.address, data: p.advertisingData, rssi: p.rssi, txPower: p.txPower, connectable: p.isConnectable, decoding: decoding)
    }

    /// The same message from its parts; `rssi` and `connectable` are left out when nil (`ble adv`).
    ///
    ///     let message = AdvertisementPayload.present(address: a, data: ad, rssi: nil, txPower: nil, connectable: nil, decoding: d)
    public static func present(address: LEAddress, data ad: AdvertisingData, rssi: Int8?, txPower: Int8?, connectable: Bool?,
                               decoding: SensorDecoding) -> JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("address", .string(address.address.description)),
            ("addressType", .string(address.type.description)),
            ("state", .string("present")),
        ]
        if let name = ad.localName { pairs.append(("name", .string(name))) }
        if let rssi { pairs.append(("rssi", .int(Int(rssi)))) }
        if let tx = ad.txPowerLevel ?? txPower { pairs.append(("txPower", .int(Int(tx)))) }
        if let connectable { pairs.append(("connectable", .bool(connectable))) }
        let services = ad.serviceUUIDs
        if !services.isEmpty { pairs.append(("services", .array(services.map { .string($0.description) }))) }
        let manufacturer = ad.manufacturerData
        if !manufacturer.isEmpty {
            pairs.append(("manufacturerData", .object(manufacturer.map { (companyKey($0.companyID), .string($0.data.hexUpper)) })))
        }
        let serviceData = ad.serviceData.sorted { $0.key.description < $1.key.description }
        if !serviceData.isEmpty {
            pairs.append(("serviceData", .object(serviceData.map { ($0.key.description, .string($0.value.hexUpper)) })))
        }
        if let brand = decoding.brand { pairs.append(("brand", .string(brand))) }
        if let model = decoding.model { pairs.append(("model", .string(model))) }
        let decoded = decoding.object
        if !decoded.isEmpty { pairs.append(("decoded", .object(decoded))) }
        return .object(pairs)
    }

    /// `{"address":..,"addressType":..,"state":"lost"}`.
    public static func lost(_ address: LEAddress) -> JSONValue {
        .object([("address", .string(address.address.description)), ("addressType", .string(address.type.description)),
                 ("state", .string("lost"))])
    }

    /// "004C": the company identifier as four upper-case hex digits.
    static func companyKey(_ id: UInt16) -> String {
        let s = String(id, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - s.count) + s
    }

    /// OpenMQTTGateway's BTtoMQTT message: `id`, `mac_type`, `name`, `rssi`, `txpower`,
    /// `manufacturerdata` and `servicedata` as hex, `servicedatauuid`, and `batt`, `tempc`, `hum`
    /// where decoded.
    public static func openMQTTGateway(_ p: DiscoveredPeripheral, decoding: SensorDecoding) -> JSONValue {
        let ad = p.advertisingData
        var pairs: [(String, JSONValue)] = [("id", .string(p.address.address.description)),
                                           ("mac_type", .int(Int(p.address.type.rawValue & 0x01)))]
        if let name = ad.localName { pairs.append(("name", .string(name))) }
        pairs.append(("rssi", .int(Int(p.rssi))))
        if let tx = ad.txPowerLevel ?? p.txPower { pairs.append(("txpower", .int(Int(tx)))) }
        if let m = ad.manufacturerData.first {
            let id = [UInt8(truncatingIfNeeded: m.companyID), UInt8(truncatingIfNeeded: m.companyID >> 8)]
            pairs.append(("manufacturerdata", .string((id + m.data).hexUpper.lowercased())))
        }
        if let (uuid, data) = ad.serviceData.sorted(by: { $0.key.description < $1.key.description }).first {
            pairs.append(("servicedata", .string(data.hexUpper.lowercased())))
            pairs.append(("servicedatauuid", .string("0x" + uuid.description.lowercased())))
        }
        for (key, value) in decoding.values {
            switch key {
            case "battery": pairs.append(("batt", value))
            case "temperature": pairs.append(("tempc", value))
            case "humidity": pairs.append(("hum", value))
            default: break
            }
        }
        return .object(pairs)
    }
}

/// Topic names under `<prefix>/<gateway id>/`.
public struct GatewayTopics: Sendable, Hashable {
    public var prefix: String
    public var gatewayID: String

    public init(prefix: String = "ble", gatewayID: String) {
        self.prefix = prefix
        self.gatewayID = gatewayID
    }

    var base: String { "\(prefix)/\(gatewayID)" }
    public var status: String { "\(base)/status" }
    public var metrics: String { "\(base)/metrics" }
    public var commands: String { "\(base)/commands" }
    public func response(_ id: String) -> String { "\(base)/responses/\(id)" }
    /// `ble/GWID/devices/C01122334455`.
    public func device(_ address: BluetoothAddress) -> String { "\(base)/devices/\(Self.compact(address))" }
    /// `ble/GWID/devices/C01122334455/180F/2A19`.
    public func characteristic(_ address: BluetoothAddress, service: BluetoothUUID, characteristic: BluetoothUUID) -> String {
        "\(device(address))/\(service.description)/\(characteristic.description)"
    }
    /// OpenMQTTGateway's layout: `home/GWID/BTtoMQTT/C01122334455`.
    public func openMQTTGateway(_ address: BluetoothAddress) -> String { "home/\(gatewayID)/BTtoMQTT/\(Self.compact(address))" }

    /// The address without colons, upper case.
    public static func compact(_ address: BluetoothAddress) -> String {
        let digits: StaticString = "0123456789ABCDEF"
        return String(unsafeUninitializedCapacity: 12) { out in
            for n in 0..<12 {
                let nibble = Int(truncatingIfNeeded: address.rawValue >> UInt64(4 * (11 - n))) & 0x0F
                out[n] = digits.utf8Start[nibble]
            }
            return 12
        }
    }
}
