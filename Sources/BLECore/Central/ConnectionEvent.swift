/// Connection parameters in force on a link (Core Spec Vol 6, Part B, 4.5.1).
public struct ConnectionParameters: Sendable, Hashable, CustomStringConvertible {
    /// Connection interval in 1.25 ms units.
    public var interval: UInt16
    public var peripheralLatency: UInt16
    /// Supervision timeout in 10 ms units.
    public var supervisionTimeout: UInt16

    public init(interval: UInt16, peripheralLatency: UInt16, supervisionTimeout: UInt16) {
        self.interval = interval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
    }

    public var intervalMilliseconds: Double { Double(interval) * 1.25 }
    public var description: String {
        "interval \(intervalMilliseconds) ms, latency \(peripheralLatency), timeout \(Int(supervisionTimeout) * 10) ms"
    }
}

/// What the application asks for when connecting (intervals in 1.25 ms units, timeout in 10 ms).
public struct ConnectionRequestParameters: Sendable, Hashable {
    public var scanInterval: UInt16 = 0x0060
    public var scanWindow: UInt16 = 0x0060
    public var minimumInterval: UInt16 = 0x0018
    public var maximumInterval: UInt16 = 0x0028
    public var peripheralLatency: UInt16 = 0
    public var supervisionTimeout: UInt16 = 0x01F4
    /// Ask the peer for larger LL packets (LE Set Data Length) when both sides support it.
    public var requestDataLengthExtension = true
    /// Ask for the 2M PHY when both sides support it.
    public var request2MPHY = true

    public init() {}
    public static let `default` = ConnectionRequestParameters()
}

/// Data length in force (Vol 6, Part B, 4.5.10).
public struct DataLength: Sendable, Hashable {
    public var maxTxOctets: UInt16 = 27
    public var maxTxTime: UInt16 = 328
    public var maxRxOctets: UInt16 = 27
    public var maxRxTime: UInt16 = 328
    public init() {}
    public init(maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16) {
        self.maxTxOctets = maxTxOctets
        self.maxTxTime = maxTxTime
        self.maxRxOctets = maxRxOctets
        self.maxRxTime = maxRxTime
    }
}

/// An LE PHY.
public enum LEPHY: UInt8, Sendable, Hashable, CustomStringConvertible {
    case le1M = 1, le2M = 2, leCoded = 3
    public var description: String { ["", "1M", "2M", "Coded"][Int(rawValue)] }
}

/// The lifecycle of one link, as a stream (`connection.events()`, `central.connectionEvents()`).
public enum ConnectionEvent: Sendable, Hashable, CustomStringConvertible {
    case connecting(attempt: Int)
    case connected(handle: UInt16, parameters: ConnectionParameters)
    case parametersUpdated(ConnectionParameters)
    case dataLengthChanged(DataLength)
    case phyChanged(tx: LEPHY, rx: LEPHY)
    /// `willReconnect` is true when the reconnect policy will try again.
    case disconnected(reason: HCIStatus, willReconnect: Bool)
    /// Attempt `attempt` will start after `delay`.
    case reconnecting(attempt: Int, delay: Duration)
    /// The policy gave up after `attempts` attempts.
    case reconnectFailed(attempts: Int, lastError: String)
    /// Encryption started, stopped or changed key (Encryption Change, Key Refresh Complete).
    case securityChanged(SecurityLevel)

    public var description: String {
        switch self {
        case .connecting(let n): return "connecting (attempt \(n))"
        case .connected(let h, let p): return "connected (handle 0x\(String(h, radix: 16)), \(p))"
        case .parametersUpdated(let p): return "parameters updated: \(p)"
        case .dataLengthChanged(let d): return "data length: tx \(d.maxTxOctets) bytes, rx \(d.maxRxOctets) bytes"
        case .phyChanged(let tx, let rx): return "PHY: tx \(tx), rx \(rx)"
        case .disconnected(let reason, let again): return "disconnected: \(reason)\(again ? ", will reconnect" : "")"
        case .reconnecting(let n, let d): return "reconnecting: attempt \(n) in \(Double(d.nanoseconds) / 1e9) s"
        case .reconnectFailed(let n, let e): return "gave up reconnecting after \(n) attempts: \(e)"
        case .securityChanged(let level): return "security: \(level)"
        }
    }
}
