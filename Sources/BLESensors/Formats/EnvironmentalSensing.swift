import BLECore
import BLEWire

/// Environmental Sensing characteristics as service data (ESS 3.1; GATT Specification
/// Supplement: Temperature 0x2A6E sint16 0.01 °C, Humidity 0x2A6F uint16 0.01 %, Pressure 0x2A6D
/// uint32 0.1 Pa, published in hPa). "Unknown" values (0x8000, 0xFFFF) and wrong lengths are left out.
///
///     let reading = try EnvironmentalSensing.decode(ad, keys: SensorKeys())
public enum EnvironmentalSensing: SensorFormat {
    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        var values: [(key: String, value: JSONValue)] = []
        if let v = ad.serviceData(uuid16: 0x2A6E), v.count == 2 {
            let raw = SensorBytes.signedLE(v, 0, 2)
            if raw != Int64(Int16.min) { values.append(("temperature", SensorBytes.scaled(raw, divisor: 100))) }
        }
        if let v = ad.serviceData(uuid16: 0x2A6F), v.count == 2 {
            let raw = Int64(SensorBytes.unsignedLE(v, 0, 2))
            if raw != 0xFFFF { values.append(("humidity", SensorBytes.scaled(raw, divisor: 100))) }
        }
        if let v = ad.serviceData(uuid16: 0x2A6D), v.count == 4 {
            values.append(("pressure", SensorBytes.scaled(Int64(SensorBytes.unsignedLE(v, 0, 4)), divisor: 1000)))
        }
        return values.isEmpty ? nil : SensorReading(format: "ESS", values: values)
    }
}
