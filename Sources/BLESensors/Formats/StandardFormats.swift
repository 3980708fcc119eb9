/// The standard and open formats (BTHome, Xiaomi, ESS, Battery, iBeacon, Eddystone), in the order they are tried.
enum StandardFormats {
    static let all: [any SensorFormat.Type] = []
}
