import BLEWire

/// How an advertising set advertises (Vol 4, Part E, 7.8.5 legacy, 7.8.53 extended).
///
///     var p = AdvertisingParameters(kind: .nonConnectable, format: .extended)
///     p.interval = .milliseconds(200); p.duration = .seconds(10)
///     let set = try await central.startAdvertising(data, parameters: p)
public struct AdvertisingParameters: Sendable {
    /// What a scanner or initiator may do with the advertisement.
    public enum Kind: Sendable, Hashable {
        /// Centrals may connect (and scan: a legacy set answers scan requests; an extended
        /// set carries no scan response).
        case connectable
        /// Scanners may ask for the scan response; nobody may connect.
        case scannable
        /// Only the advertising data is sent.
        case nonConnectable
    }

    /// Which advertising PDUs carry the data.
    public enum Format: Sendable, Hashable {
        /// ADV_IND, ADV_SCAN_IND or ADV_NONCONN_IND: 31 octets of data and 31 of scan response,
        /// seen by every scanner. Works on every controller.
        case legacy
        /// ADV_EXT_IND with AUX_ADV_IND (and AUX_CHAIN_IND): up to the controller's maximum
        /// advertising data length (LE Read Maximum Advertising Data Length, at most 1650),
        /// seen only by scanners that use extended scanning.
        case extended
    }

    public var kind: Kind
    public var format: Format
    /// Time between advertising events, 20 ms to 10.24 s for legacy PDUs (the controller
    /// adds up to 10 ms of random delay to each).
    public var interval: Duration
    /// Requested transmit power in dBm, -127 to 20, for extended advertising commands; nil
    /// lets the controller choose. Controllers with only legacy advertising choose themselves.
    public var txPower: Int8?
    /// The address the set advertises with, the same policy type the central scans and
    /// connects with: public, static random (LE Set Random Address for legacy commands, LE
    /// Set Advertising Set Random Address for an extended set), or resolvable private, a new
    /// one from the policy every rotation (`AdvertisingSet.address` says which one now).
    /// Legacy commands have one random address per controller, shared with scanning and
    /// connecting (Vol 4, Part E, 7.8.4): give the central the same policy.
    public var ownAddress: OwnAddress
    /// Advertising stops after this long (at most 655.35 s); nil: until stopped.
    public var duration: Duration?
    /// Advertising stops after this many extended advertising events (1 to 255); needs a
    /// controller with extended advertising. Nil: no limit.
    public var maximumEvents: UInt8?
    /// After a central's link made on this set ends, advertise again with the same data.
    public var resumeAfterDisconnect: Bool

    public init(kind: Kind = .connectable, format: Format = .legacy, interval: Duration = .milliseconds(100),
                txPower: Int8? = nil, ownAddress: OwnAddress = .public, duration: Duration? = nil,
                maximumEvents: UInt8? = nil, resumeAfterDisconnect: Bool = false) {
        self.kind = kind
        self.format = format
        self.interval = interval
        self.txPower = txPower
        self.ownAddress = ownAddress
        self.duration = duration
        self.maximumEvents = maximumEvents
        self.resumeAfterDisconnect = resumeAfterDisconnect
    }

    /// The interval in 0.625 ms units (Vol 4, Part E, 7.8.5, 7.8.53).
    var hciInterval: UInt32 {
        let units = interval.nanoseconds / 625_000
        return UInt32(clamping: units)
    }

    /// The duration in 10 ms units (Vol 4, Part E, 7.8.56); 0 for none.
    var hciDuration: UInt16 {
        guard let duration else { return 0 }
        return UInt16(clamping: max(1, (duration.nanoseconds + 9_999_999) / 10_000_000))
    }
}
