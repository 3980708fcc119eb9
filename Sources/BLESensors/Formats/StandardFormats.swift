/// The standard and open formats (Battery, ESS, iBeacon, Eddystone, BTHome, Xiaomi), in the order they are tried.
enum StandardFormats {
    static let all: [any SensorFormat.Type] = [
        BatteryService.self, EnvironmentalSensing.self, IBeacon.self, Eddystone.self,
        BTHome.self, MiBeacon.self, XiaomiCustom.self,
    ]
}
