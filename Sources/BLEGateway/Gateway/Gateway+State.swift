#if canImport(Glibc)
import Glibc
#endif

extension Gateway {
    /// The state directory `ble gateway` uses without `--state-dir`: `$STATE_DIRECTORY` (what
    /// systemd's `StateDirectory=` sets), else `$XDG_STATE_HOME/swift-ble-host/gateway`, else
    /// `~/.local/state/swift-ble-host/gateway`.
    ///
    ///     let gateway = try Gateway(central: central, config: config, stateDirectory: Gateway.defaultStateDirectory)
    public static var defaultStateDirectory: String {
        // systemd may list several directories, separated by ':'; the first is the unit's own.
        if let d = getenv("STATE_DIRECTORY"), d.pointee != 0 { return String(String(cString: d).split(separator: ":").first ?? "") }
        if let x = getenv("XDG_STATE_HOME"), x.pointee != 0 { return String(cString: x) + "/swift-ble-host/gateway" }
        let home = getenv("HOME").map { String(cString: $0) } ?? "/tmp"
        return home + "/.local/state/swift-ble-host/gateway"
    }
}
