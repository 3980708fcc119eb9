import BLECore
import BLEGateway
import BLESensors
import Foundation
import Testing
import BLEWire

/// Every row of SensorKinds against what Home Assistant accepts, written out from Home Assistant's
/// source (github home-assistant/core): `DEVICE_CLASS_UNITS` and `DEVICE_CLASS_STATE_CLASSES` of
/// homeassistant/components/sensor/const.py with the unit enums of homeassistant/const.py (whose
/// micro sign is the Greek μ, U+03BC, as its pylint check `hass_enforce_greek_micro_char` requires),
/// `BinarySensorDeviceClass` of homeassistant/components/binary_sensor/__init__.py and
/// `EventDeviceClass` of homeassistant/components/event/const.py. Since 2025.3 Home Assistant
/// refuses an MQTT sensor whose unit does not fit its device class.
@Suite struct HomeAssistantUnitsTests {
    static let micro = "\u{03BC}"
    static let energy: Set<String> = ["J", "kJ", "MJ", "GJ", "mWh", "Wh", "kWh", "MWh", "GWh", "TWh", "cal", "kcal", "Mcal", "Gcal"]
    static let volume: Set<String> = ["ft³", "CCF", "MCF", "m³", "L", "mL", "gal", "fl. oz."]
    static let length: Set<String> = ["mm", "cm", "m", "km", "in", "ft", "yd", "mi", "nmi"]

    /// Sensor device class → the units Home Assistant allows for it (nil: no unit).
    static let sensorUnits: [String: Set<String?>] = [
        "battery": ["%"],
        "carbon_dioxide": ["ppm"],
        "carbon_monoxide": ["ppm"],
        "conductivity": ["S/cm", "\(micro)S/cm", "mS/cm"],
        "current": ["A", "mA"],
        "distance": Set(length.map { Optional($0) }),
        "duration": ["d", "h", "min", "s", "ms"],
        "energy": Set(energy.map { Optional($0) }),
        "gas": ["CCF", "MCF", "ft³", "m³"],
        "humidity": ["%"],
        "illuminance": ["lx"],
        "moisture": ["%"],
        "pm1": ["\(micro)g/m³"],
        "pm10": ["\(micro)g/m³"],
        "pm25": ["\(micro)g/m³"],
        "power": ["W", "kW", "MW", "GW", "TW"],
        "precipitation": ["cm", "in", "mm"],
        "pressure": ["mPa", "Pa", "hPa", "kPa", "bar", "cbar", "mbar", "mmHg", "inHg", "inH₂O", "psi"],
        "signal_strength": ["dB", "dBm"],
        "speed": ["Beaufort", "ft/s", "in/s", "km/h", "kn", "m/s", "mph", "mm/s", "in/d", "in/h", "mm/d", "mm/h"],
        "temperature": ["°C", "°F", "K"],
        "timestamp": [nil],
        "volatile_organic_compounds": ["\(micro)g/m³"],
        "voltage": ["\(micro)V", "mV", "V", "kV", "MV"],
        "volume": Set(volume.map { Optional($0) }),
        "volume_flow_rate": ["m³/h", "m³/min", "m³/s", "ft³/min", "L/h", "L/min", "L/s", "gal/h", "gal/min", "gal/d", "mL/s"],
        "volume_storage": Set(volume.map { Optional($0) }),
        "water": ["CCF", "ft³", "m³", "gal", "L"],
        "weight": ["g", "kg", "mg", "\(micro)g", "oz", "lb", "st"],
    ]

    /// Sensor device classes whose `DEVICE_CLASS_STATE_CLASSES` do not include `measurement`.
    static let notMeasurement: Set<String> = ["energy", "gas", "timestamp", "volume", "water"]

    /// Meters take `total`, as Home Assistant's BTHome integration gives its energy, gas and water
    /// sensors (homeassistant/components/bthome/sensor.py); volume may not be `measurement` (above).
    static let meterStateClasses: [String: String] = [
        "energy": "total", "gas": "total", "water": "total", "volume": "total",
    ]
    static let binarySensorClasses: Set<String> = [
        "battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door", "garage_door", "gas", "heat",
        "light", "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug", "power", "presence", "problem",
        "running", "safety", "smoke", "sound", "tamper", "update", "vibration", "window",
    ]
    static let eventClasses: Set<String> = ["button", "doorbell", "motion"]

    @Test(arguments: SensorKinds.all)
    func everyRowIsOneHomeAssistantAccepts(_ kind: SensorKind) throws {
        switch kind.component {
        case .sensor:
            guard let deviceClass = kind.deviceClass else {
                // Without a device class any unit is taken; a measurement needs a number.
                #expect(kind.unit?.contains("\u{00B5}") != true, "\(kind.key): the micro sign must be U+03BC")
                return
            }
            let allowed = try #require(Self.sensorUnits[deviceClass], "\(kind.key): \(deviceClass) is not a sensor device class of Home Assistant")
            #expect(allowed.contains(kind.unit), "\(kind.key): \(kind.unit ?? "no unit") is not a unit of \(deviceClass)")
            if kind.isMeasurement {
                #expect(!Self.notMeasurement.contains(deviceClass), "\(kind.key): \(deviceClass) takes no state_class measurement")
            }
        case .binarySensor:
            #expect(kind.unit == nil && !kind.isMeasurement)
            if let deviceClass = kind.deviceClass {
                #expect(Self.binarySensorClasses.contains(deviceClass), "\(kind.key): \(deviceClass) is not a binary sensor device class")
            }
        case .event:
            #expect(kind.unit == nil && !kind.isMeasurement && !kind.eventTypes.isEmpty)
            if let deviceClass = kind.deviceClass {
                #expect(Self.eventClasses.contains(deviceClass), "\(kind.key): \(deviceClass) is not an event device class")
            }
        }
    }

    /// The configs of every key, numbered too, carry the row's class and unit, and ids of
    /// `[A-Za-z0-9_-]` only.
    @Test func everyConfigCarriesItsRowAndPlainIDs() throws {
        let address = BluetoothAddress("A4:C1:38:8D:18:B2")!
        let device = HomeAssistantDiscovery.Device(address: address, name: "Sensor", decoding: SensorDecoding(), publishInterval: .seconds(10))
        let keys = SensorKinds.all.flatMap { [$0.key, $0.key + "_2"] }
        let configs = HomeAssistantDiscovery.configs(for: device, keys: keys, topics: GatewayTopics(gatewayID: "gw"))
        #expect(configs.count == keys.count)
        let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
        for (key, message) in zip(keys, configs) {
            let kind = try #require(SensorKinds.kind(for: key))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.payload)) as? [String: Any])
            #expect(message.topic == "homeassistant/\(kind.component.rawValue)/ble_A4C1388D18B2/\(key)/config")
            #expect(object["device_class"] as? String == kind.deviceClass, "\(key)")
            #expect(object["unit_of_measurement"] as? String == kind.unit, "\(key)")
            let meter = Self.meterStateClasses[kind.deviceClass ?? ""]
            #expect(object["state_class"] as? String == (kind.isMeasurement ? "measurement" : meter), "\(key)")
            let unique = try #require(object["unique_id"] as? String)
            #expect(unique.allSatisfy { plain.contains($0) }, "unique_id \(unique)")
            // object_id stopped working in Home Assistant 2026.4: default_entity_id is "<domain>.<object id>".
            #expect(object["object_id"] == nil, "\(key)")
            let entity = try #require(object["default_entity_id"] as? String)
            #expect(entity.hasPrefix(kind.component.rawValue + "."), "\(entity)")
            #expect(entity.dropFirst(kind.component.rawValue.count + 1).allSatisfy { plain.contains($0) }, "default_entity_id \(entity)")
        }
    }
}
