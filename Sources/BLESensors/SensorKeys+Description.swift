import BLECore

/// `print(keys)`, `dump(keys)` and interpolation name the addresses that have a bindkey, never
/// the key bytes.
///
///     print(keys)   // SensorKeys(A4:C1:38:00:00:01: <redacted>)
extension SensorKeys: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        let addresses = keys.keys.map { "\($0)" }.sorted()
        return "SensorKeys(" + addresses.map { "\($0): <redacted>" }.joined(separator: ", ") + ")"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: keys.keys.map { "\($0)" }.sorted().map { (label: $0, value: "<redacted>" as Any) })
    }
}
