import BLECore

/// Battery Level (0...100 %) as service data of the Battery service (0x180F) or of the Battery
/// Level characteristic (0x2A19) (Battery Service 1.1, 3.1). Another length or a level above 100
/// is not this format.
///
///     let reading = try BatteryService.decode(ad, keys: SensorKeys())
public enum BatteryService: SensorFormat {
    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        guard let v = ad.serviceData(uuid16: 0x180F) ?? ad.serviceData(uuid16: 0x2A19), v.count == 1, v[0] <= 100 else { return nil }
        return SensorReading(format: "Battery", values: [("battery", .int(Int(v[0])))])
    }
}
