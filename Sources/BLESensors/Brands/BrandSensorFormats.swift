import BLECore

/// The brand formats as one decoder: the first of Ruuvi, SwitchBot, Qingping, Mopeka, Inkbird
/// and Govee that recognises the advertisement decodes it.
///
///     if let r = try BrandSensorFormats.decode(ad, keys: SensorKeys()) { print(r.format, r.values) }
public enum BrandSensorFormats: SensorFormat {
    /// The first reading of a brand format; when none decodes and one recognised its bytes but
    /// found them malformed, that format's error.
    public static func decode(_ ad: SensorAdvertisement, keys: SensorKeys) throws(SensorDecodeError) -> SensorReading? {
        var failure: SensorDecodeError?
        for format in BrandFormats.all {
            do {
                if let reading = try format.decode(ad, keys: keys) { return reading }
            } catch {
                if failure == nil { failure = error }
            }
        }
        if let failure { throw failure }
        return nil
    }
}
