import BLEWire

/// Connection parameters in force on a link (Core Spec Vol 6, Part B, 4.5.1).
///
///     if case .connected(_, let p) = event { print(p.interval) }   // "0.03 seconds"
public struct ConnectionParameters: Sendable, Hashable, CustomStringConvertible {
    /// Time between connection events: 7.5 ms to 4 s, in steps of 1.25 ms.
    public var interval: Duration
    /// Connection events the peripheral may skip (0-499).
    public var peripheralLatency: UInt16
    /// How long the link may go without a packet before it is lost: 100 ms to 32 s, in steps of 10 ms.
    public var supervisionTimeout: Duration

    public init(interval: Duration, peripheralLatency: UInt16, supervisionTimeout: Duration) {
        self.interval = interval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
    }

    /// From the units HCI events carry (1.25 ms, 10 ms).
    package init(hciInterval: UInt16, peripheralLatency: UInt16, hciSupervisionTimeout: UInt16) {
        self.init(interval: HCITimeUnit.connectionInterval.duration(hciInterval), peripheralLatency: peripheralLatency,
                  supervisionTimeout: HCITimeUnit.supervisionTimeout.duration(hciSupervisionTimeout))
    }

    /// The interval in 1.25 ms units, as HCI carries it.
    package var hciInterval: UInt16 { HCITimeUnit.connectionInterval.units(interval) }
    /// The supervision timeout in 10 ms units, as HCI carries it.
    package var hciSupervisionTimeout: UInt16 { HCITimeUnit.supervisionTimeout.units(supervisionTimeout) }

    public var description: String {
        "interval \(interval.millisecondsDescription), latency \(peripheralLatency), timeout \(supervisionTimeout.millisecondsDescription)"
    }
}

/// What the application asks for when connecting. Durations are rounded to the units HCI
/// carries (0.625 ms for the scan, 1.25 ms for intervals, 10 ms for the timeout) and clamped
/// to the ranges of Vol 4, Part E, 7.8.12.
///
///     var p = ConnectionRequestParameters()
///     p.maximumInterval = .milliseconds(15)
///     let link = try await central.connect(peer, parameters: p)
public struct ConnectionRequestParameters: Sendable, Hashable {
    /// How often and how long the controller listens for the peer's advertisements.
    public var scanInterval: Duration = .milliseconds(60)
    public var scanWindow: Duration = .milliseconds(60)
    /// The range of connection intervals the peer may pick from (7.5 ms to 4 s).
    public var minimumInterval: Duration = .milliseconds(30)
    public var maximumInterval: Duration = .milliseconds(50)
    /// Connection events the peripheral may skip (0-499).
    public var peripheralLatency: UInt16 = 0
    /// How long the link may go without a packet before it is lost (100 ms to 32 s).
    public var supervisionTimeout: Duration = .seconds(5)
    /// Ask the peer for larger LL packets (LE Set Data Length) when both sides support it.
    public var requestDataLengthExtension = true
    /// The PHY to connect on and to keep (LE 2M by default, where both sides support it).
    public var phy: ConnectionPHY = .le2M
    /// Shorthand for `phy == .le2M` (false sets `.le1M`).
    public var request2MPHY: Bool {
        get { phy == .le2M }
        set { phy = newValue ? .le2M : .le1M }
    }

    public init() {}
    public static let `default` = ConnectionRequestParameters()
}

extension ConnectionRequestParameters {
    /// LE_Scan_Interval in 0.625 ms units (0x0004-0x4000).
    var hciScanInterval: UInt16 { HCITimeUnit.slot.units(scanInterval, in: 0x0004...0x4000) }
    /// LE_Scan_Window in 0.625 ms units (0x0004 up to the interval).
    var hciScanWindow: UInt16 { HCITimeUnit.slot.units(scanWindow, in: 0x0004...hciScanInterval) }
    /// The connection parameters of LE Create Connection, in HCI units (7.8.12).
    var hciConnection: LEConnectionParameters {
        let minimum = HCITimeUnit.connectionInterval.units(minimumInterval, in: 0x0006...0x0C80)
        let maximum = HCITimeUnit.connectionInterval.units(maximumInterval, in: minimum...0x0C80)
        return LEConnectionParameters(intervalMin: minimum, intervalMax: maximum, maxLatency: min(peripheralLatency, 0x01F3),
                                      supervisionTimeout: HCITimeUnit.supervisionTimeout.units(supervisionTimeout, in: 0x000A...0x0C80))
    }
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

/// The PHY a central connects on and asks the link to use (Vol 6, Part A, 2.2 and 3;
/// Vol 4, Part E, 7.8.66 and 7.8.49). Where the controller lacks LE Extended Create
/// Connection or the PHY (its LE features), the link starts on LE 1M.
///
///     var request = ConnectionRequestParameters(); request.phy = .leCoded(.s8)
public enum ConnectionPHY: Sendable, Hashable, CustomStringConvertible {
    /// Initiate on LE 1M and stay there.
    case le1M
    /// Initiate on LE 1M (with LE 2M connection parameters too), then switch to LE 2M
    /// (LE Set PHY) when both sides support it.
    case le2M
    /// Initiate on LE Coded (long range), and prefer `coding` on the link (LE Set PHY,
    /// PHY_Options) when both sides support LE Coded.
    case leCoded(LECoding)

    /// The coding of the LE Coded PHY: S=2 (500 kb/s) or S=8 (125 kb/s, the longest range).
    public enum LECoding: Sendable, Hashable {
        case s2, s8
        /// PHY_Options of LE Set PHY (7.8.49): 0x01 prefers S=2, 0x02 prefers S=8.
        var phyOptions: UInt16 { self == .s2 ? 0x0001 : 0x0002 }
    }

    public var description: String {
        switch self {
        case .le1M: return "1M"
        case .le2M: return "2M"
        case .leCoded(.s2): return "Coded S=2"
        case .leCoded(.s8): return "Coded S=8"
        }
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
    /// The encryption key size became known or changed, in octets; nil once the link is not
    /// encrypted (`Connection.encryptionKeySize`). Follows `securityChanged`.
    case encryptionKeySizeChanged(Int?)

    public var description: String {
        switch self {
        case .connecting(let n): return "connecting (attempt \(n))"
        case .connected(let h, let p): return "connected (handle \(h.hex), \(p))"
        case .parametersUpdated(let p): return "parameters updated: \(p)"
        case .dataLengthChanged(let d): return "data length: tx \(d.maxTxOctets) bytes, rx \(d.maxRxOctets) bytes"
        case .phyChanged(let tx, let rx): return "PHY: tx \(tx), rx \(rx)"
        case .disconnected(let reason, let again): return "disconnected: \(reason)\(again ? ", will reconnect" : "")"
        case .reconnecting(let n, let d): return "reconnecting: attempt \(n) in \(Double(d.nanoseconds) / 1e9) s"
        case .reconnectFailed(let n, let e): return "gave up reconnecting after \(n) attempts: \(e)"
        case .securityChanged(let level): return "security: \(level)"
        case .encryptionKeySizeChanged(let size): return size.map { "encryption key: \($0) octets" } ?? "encryption key: none"
        }
    }
}
