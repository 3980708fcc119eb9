import BLEWire

/// What a scan subscriber learns about one device.
///
///     for try await event in await central.scan(filter: ScanFilter(services: [BluetoothUUID(uuid16: 0x180D)])) {
///         if case .discovered(let p) = event { print(p) }
///     }
public enum ScanEvent: Sendable, Hashable, CustomStringConvertible {
    /// First report of a device for this subscriber (or the first after it was lost).
    case discovered(DiscoveredPeripheral)
    /// A later report whose RSSI or data changed (every report with `allowDuplicates`).
    case updated(DiscoveredPeripheral)
    /// Not heard for `ScanOptions.lostTimeout`, or dropped from the bounded device table.
    case lost(DiscoveredPeripheral)

    /// The device the event is about.
    public var peripheral: DiscoveredPeripheral {
        switch self {
        case .discovered(let p), .updated(let p), .lost(let p): return p
        }
    }

    public var description: String {
        switch self {
        case .discovered(let p): return "discovered \(p)"
        case .updated(let p): return "updated \(p)"
        case .lost(let p): return "lost \(p)"
        }
    }
}

/// A device seen while scanning: its address, its advertising data with the scan response
/// merged in, and signal strength. A value: later reports give new values.
///
///     print(p.address, p.name ?? "?", p.rssi, p.advertisingData.serviceUUIDs)
public struct DiscoveredPeripheral: Sendable, Hashable, CustomStringConvertible {
    /// The advertiser's address. For an anonymous advertisement (`isAnonymous`) the controller
    /// gave none; the address bits are whatever the report carried.
    public var address: LEAddress
    /// Advertising data and scan response data, merged (see `AdvertisingData.merging`).
    public var advertisingData: AdvertisingData
    /// RSSI of the latest report in dBm (127: the controller could not measure it).
    public var rssi: Int8
    /// Exponential moving average of the RSSI (weight 1/4 for each new report).
    public var smoothedRSSI: Double
    /// When the latest report arrived, on the central's clock (its `TimerScheduler`).
    ///
    ///     let age = p.lastSeen.duration(to: .now)
    public var lastSeen: ContinuousClock.Instant
    /// Event_Type of the latest advertisement (not scan response), as the extended report's
    /// bitfield (legacy types mapped as in Vol 4, Part E, 7.7.65.13).
    public var eventType: ExtendedAdvertisingEventType
    /// The advertiser accepts connections.
    public var isConnectable: Bool
    /// Address_Type 0xFF: an extended advertisement without an address.
    public var isAnonymous: Bool
    /// The data was cut short by the controller (data status "incomplete, truncated").
    public var isDataTruncated: Bool
    /// For directed advertising: the address the advertisement was aimed at.
    public var directAddress: LEAddress?
    /// Transmit power in dBm from the extended report, else from the TX Power Level structure.
    public var txPower: Int8?
    /// Advertising_SID of extended advertising; nil for legacy advertising.
    public var advertisingSID: UInt8?
    /// The identity address of a bonded peer that advertises with a resolvable private
    /// address (resolved with its IRK, or by the controller's resolving list).
    public var identityAddress: LEAddress? = nil

    /// The address that names the device for good: its identity address when known.
    public var identity: LEAddress { identityAddress ?? address }

    /// The Complete (else Shortened) Local Name.
    public var name: String? { advertisingData.localName }

    public var description: String {
        var s = "\(address)"
        if isAnonymous { s = "anonymous" }
        if let identityAddress, identityAddress.address != address.address { s += " (identity \(identityAddress.address))" }
        if let name { s += " \"\(name)\"" }
        if rssi != 127 { s += " \(rssi) dBm" }
        if !isConnectable { s += " non-connectable" }
        if let directAddress { s += " directed to \(directAddress)" }
        if isDataTruncated { s += " (data truncated)" }
        return s
    }
}

/// Why a scan stream ended with an error (besides the controller's own `HCIError` when it
/// refuses to start the scan).
public enum ScanError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The adapter is in a state that ends scans: `.poweredOff` (see
    /// `ScanOptions.whenPoweredOff`), `.unauthorized` or `.unsupported`.
    case adapterNotReady(AdapterState)
    /// The transport to the controller went away while scanning.
    case transportLost(String)
    /// The adapter stayed in a transitional state (`.unknown`, `.resetting`) for the scan's
    /// `ScanOptions.readyTimeout` without coming to `.poweredOn`.
    case notReadyInTime(AdapterState, waited: Duration)

    public var description: String {
        switch self {
        case .adapterNotReady(let state):
            return "cannot scan: the adapter is \(state), not powered on; wait for .poweredOn in stateEvents() or call powerOn()"
        case .transportLost(let why):
            return "scan ended: the controller transport is lost (\(why)); reopen the adapter"
        case .notReadyInTime(let state, let waited):
            return "scan ended: the adapter stayed \(state) for \(waited.millisecondsDescription) without being powered on; check central.snapshot.reason, or raise ScanOptions.readyTimeout"
        }
    }
}
