import BLECore
import GATTClient

/// Why the gateway could not start or stopped.
public enum GatewayError: Error, Sendable, Hashable, CustomStringConvertible {
    case config(ConfigError)
    case mqtt(MQTTError)

    public var description: String {
        switch self {
        case .config(let e): return e.description
        case .mqtt(let e): return e.description
        }
    }
}

/// A failed command, answered on `ble/GWID/responses/<id>`: a stable code and the message.
public struct CommandError: Error, Sendable, Hashable, CustomStringConvertible {
    /// "badRequest", "notConnected", "connection", "gatt", "security", "unknownCommand".
    public var code: String
    public var message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    static func bad(_ message: String) -> CommandError { CommandError("badRequest", message) }
    static func gatt(_ e: GATTError) -> CommandError {
        if case .connection(let c) = e { return CommandError("connection", c.description) }
        return CommandError("gatt", e.description)
    }
    static func connection(_ e: ConnectionError) -> CommandError { CommandError("connection", e.description) }
}
