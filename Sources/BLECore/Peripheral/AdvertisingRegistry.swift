import BLEWire

/// The central's advertising state, on the adapter's executor: the live sets, the links made
/// on them, what the controller said about its limits, and the stream of incoming links.
struct AdvertisingRegistry {
    /// Live sets by Advertising_Handle.
    var sets: [UInt8: AdvertisingSet] = [:]
    /// Handles taken by sets being set up (their commands are under way).
    var reserved: Set<UInt8> = []
    /// Sets waiting for their link to end before advertising again, by Connection_Handle.
    var resumeAfterLink: [UInt16: UInt8] = [:]
    /// Host-side duration timers of legacy sets (legacy commands have no duration).
    var legacyTimers: [UInt8: any ScheduledTimer] = [:]
    /// When each set with resolvable private addresses takes its next one.
    var rotationTimers: [UInt8: any ScheduledTimer] = [:]
    /// LE Read Maximum Advertising Data Length, once read.
    var maximumDataLength: Int?
    /// LE Read Number of Supported Advertising Sets, once read.
    var supportedSets: Int?
    /// The LE event mask has the Advertising Set Terminated bit (set before the first extended set).
    var setTerminatedEventEnabled = false
    /// Peripheral-role links, as they are accepted.
    let incoming: Broadcaster<Connection>

    init(executor: AdapterExecutor) {
        incoming = Broadcaster(executor: executor)
    }

    /// The lowest handle neither live nor reserved, below `limit`.
    func freeHandle(limit: Int) -> UInt8? {
        (0..<UInt8(clamping: min(limit, 0xF0))).first { sets[$0] == nil && !reserved.contains($0) }
    }

    /// What the controller knew is gone (a reset, a new transport): read it again next time.
    mutating func forgetController() {
        maximumDataLength = nil
        supportedSets = nil
        setTerminatedEventEnabled = false
        resumeAfterLink.removeAll()
        for timer in legacyTimers.values { timer.cancel() }
        legacyTimers.removeAll()
        for timer in rotationTimers.values { timer.cancel() }
        rotationTimers.removeAll()
    }
}

extension ControllerInfo {
    /// LE feature bit 12 (LE Extended Advertising) and the commands to drive extended sets.
    /// The extended scanning commands are required too: the scanner then uses them as well,
    /// and a controller may refuse one family after the other was used (Vol 4, Part E, 3.1.1).
    public var supportsExtendedAdvertising: Bool {
        supportsExtendedScanning
            && supports(HCICommand.LESetExtendedAdvertisingParameters.opcode)
            && supports(HCICommand.LESetExtendedAdvertisingEnable.opcode)
    }
}
