import BLECore

/// `--phy` of `ble scan` and `ble connect`: the PHYs to scan on, the PHY to connect on.
enum PHYOption {
    static let scanOption = OptionSpec.value("phy", nil, "1m|coded|1m,coded", "primary PHYs to scan on (default 1m; coded needs a controller with LE Coded, else 1m)")
    static let connectOption = OptionSpec.value("phy", nil, "1m|2m|coded|coded-s2|coded-s8", "PHY to connect on and keep (default 2m where both sides have it; coded is S=8)")

    /// The `--phy` of a scan; LE 1M when not given.
    static func scan(_ ctx: CommandContext) throws(UsageError) -> ScanOptions.ScanPHYs {
        guard let value = ctx.args.value("phy") else { return .le1M }
        var phys: ScanOptions.ScanPHYs = []
        for part in value.lowercased().split(separator: ",") {
            switch part {
            case "1m": phys.insert(.le1M)
            case "coded": phys.insert(.leCoded)
            default: throw UsageError("--phy of scan takes 1m, coded or 1m,coded (LE 2M is no primary advertising PHY), not \"\(value)\"")
            }
        }
        guard !phys.isEmpty else { throw UsageError("--phy of scan takes 1m, coded or 1m,coded, not \"\(value)\"") }
        return phys
    }

    /// The `--phy` of a connection; LE 2M (where both sides have it) when not given.
    static func connect(_ ctx: CommandContext) throws(UsageError) -> ConnectionPHY {
        guard let value = ctx.args.value("phy") else { return .le2M }
        switch value.lowercased() {
        case "1m": return .le1M
        case "2m": return .le2M
        case "coded", "coded-s8": return .leCoded(.s8)
        case "coded-s2": return .leCoded(.s2)
        default: throw UsageError("--phy of connect takes 1m, 2m, coded, coded-s2 or coded-s8, not \"\(value)\"")
        }
    }
}
