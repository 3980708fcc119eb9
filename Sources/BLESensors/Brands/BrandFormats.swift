/// The brand formats (Govee, SwitchBot, Qingping, Inkbird, Ruuvi, Mopeka), in the order they are tried.
enum BrandFormats {
    static let all: [any SensorFormat.Type] = [Ruuvi.self, SwitchBot.self, Qingping.self, Mopeka.self, Inkbird.self, Govee.self]
}
