import BLECore

/// Why bytes that claim to be a sensor format could not be decoded. Decoders never trap:
/// short, long or hostile payloads end here.
public struct SensorDecodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The format whose bytes were wrong ("BTHome", "Ruuvi", ...).
    public var format: String
    /// What was wrong, with the offsets or values involved.
    public var reason: String

    public init(format: String, reason: String) {
        self.format = format
        self.reason = reason
    }

    public var description: String { "\(format) payload not decoded: \(reason)" }
}
