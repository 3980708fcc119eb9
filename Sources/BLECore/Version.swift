/// The package's version, as `ble --version` prints it and CHANGELOG.md's latest entry names it.
///
///     print("swift-ble-host \(SwiftBLEHost.version)")
public enum SwiftBLEHost {
    public static let version = "0.2.0"
}
