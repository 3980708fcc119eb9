/// The maker and model of a BTHome device, which its payload does not carry: from its local
/// name, as bthome-ble's parser names them (Shelly BLU devices, b-parasite, Xiaomi thermometers
/// running ATC1441/pvvx firmware with BTHome).
///
///     let (brand, model) = BTHomeDevices.identify(localName: "SBDW-002C")   // Shelly, BLU Door/Window
enum BTHomeDevices {
    /// Shelly's names, exact.
    static let shelly: [String: String] = [
        "SBBT-002C": "BLU Button1", "SBBT-102C": "BLU Button1 ZB", "SBDW-002C": "BLU Door/Window",
        "SBMO-003Z": "BLU Motion", "SBHT-003C": "BLU H&T", "SBHT-203C": "BLU H&T ZB", "SBHT-103C": "BLU H&T Display ZB",
        "SBBT-004CEU": "BLU Wall Switch 4", "SBBT-004CUS": "BLU RC Button 4", "SBTR-001AEU": "BLU TRV",
    ]

    /// Brand and model for `localName`; nil for names of no known maker.
    static func identify(localName: String?) -> (brand: String, model: String)? {
        guard let name = localName else { return nil }
        if let model = shelly[name] { return ("Shelly", model) }
        if name.hasPrefix("prst") { return ("b-parasite", "Plant sensor") }
        if name.hasPrefix("ATC") || name.hasPrefix("LYWSD03MMC") { return ("Xiaomi", "Temperature/Humidity sensor") }
        return nil
    }
}
