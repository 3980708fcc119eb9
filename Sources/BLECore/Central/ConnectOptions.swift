/// What `Central.connect` was asked for. A connection keeps them for its reconnect attempts,
/// and a second `connect` to the same peer must ask for the same.
struct ConnectOptions {
    var timeout: Duration
    var reconnect: ReconnectPolicy
    var parameters: ConnectionRequestParameters

    /// The options that differ from `other`'s.
    func differences(from other: ConnectOptions) -> [ConnectOption] {
        var d: [ConnectOption] = []
        if timeout != other.timeout { d.append(.timeout) }
        if !reconnect.matches(other.reconnect) { d.append(.reconnect) }
        if parameters != other.parameters { d.append(.parameters) }
        return d
    }
}

/// An argument of `Central.connect`, named in `ConnectionError.alreadyConnected`.
public enum ConnectOption: String, Sendable, Hashable, CustomStringConvertible {
    case timeout
    case reconnect
    case parameters

    public var description: String { rawValue }
}

extension ReconnectPolicy {
    /// Whether two policies behave the same. Two `.custom` policies match: closures cannot be
    /// compared.
    func matches(_ other: ReconnectPolicy) -> Bool {
        switch (self, other) {
        case (.never, .never), (.custom, .custom): return true
        case (.always(let a, let b), .always(let c, let d)): return a == c && b == d
        default: return false
        }
    }
}
