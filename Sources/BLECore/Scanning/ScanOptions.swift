import BLEWire

/// How one `Central.scan` subscriber wants to scan.
///
/// Several subscribers share one controller scan; the controller runs with the union of
/// their wishes: active if any subscriber asks for active scanning, the smallest interval,
/// and the largest window that fits in that interval (Vol 4, Part E, 7.8.10).
///
///     var options = ScanOptions(mode: .passive, lostTimeout: .seconds(10))
///     options.timeout = .seconds(30)
///     for try await event in await central.scan(options: options) { print(event) }
public struct ScanOptions: Sendable, Hashable {
    /// Passive scanning only listens; active scanning also sends SCAN_REQ and receives the
    /// scan response (often where the name is).
    public enum Mode: Sendable, Hashable { case passive, active }

    /// How many events a slow consumer's stream keeps before dropping.
    public typealias BufferingPolicy = StreamBufferingPolicy

    public var mode: Mode
    /// How often the controller starts listening (LE_Scan_Interval): 2.5 ms to 10.24 s, rounded
    /// to 0.625 ms and clamped.
    public var interval: Duration
    /// How long it listens each time (LE_Scan_Window): 2.5 ms up to the interval, rounded to
    /// 0.625 ms and clamped.
    public var window: Duration
    /// False: a device is delivered when first discovered and again only when its RSSI or
    /// data changed. True: every report is delivered. The controller's own duplicate
    /// filtering is always off; this de-duplication happens per subscriber.
    public var allowDuplicates: Bool
    /// Reports of a device that change nothing but its RSSI (with `allowDuplicates`, also
    /// exact repeats) are delivered at most once per this interval; a change of its data,
    /// connectability or TX power is delivered at once. Nil: no such limit. For consumers
    /// that want every change but only a periodic "still here", such as a gateway:
    ///
    ///     ScanOptions(allowDuplicates: true, duplicateInterval: .seconds(10))
    public var duplicateInterval: Duration?
    /// A device not heard for this long is reported `.lost`; nil: never.
    public var lostTimeout: Duration?
    /// The stream finishes (without error) after this long; nil: only when the consumer stops.
    public var timeout: Duration?
    public var bufferingPolicy: BufferingPolicy
    /// How long a scan asked for while the adapter is `.unknown` (not opened yet) or
    /// `.resetting` waits for `.poweredOn`, and how long a running scan waits when a backend
    /// reports `.unknown`. Past it the stream ends with `ScanError.notReadyInTime`. A running
    /// scan outlives a reset or a Hardware Error with no limit: it runs again after `powerOn()`.
    public var readyTimeout: Duration
    /// What a power-off (`.poweredOff` reported by the system or a backend, not `close()`) does.
    public var whenPoweredOff: PowerOffBehavior
    /// The primary PHYs to scan on: LE 1M (legacy and most extended advertising), LE Coded
    /// (long range), or both. LE Coded needs extended scanning and the LE Coded PHY at the
    /// controller (its LE features); where it has neither, the scan runs on LE 1M.
    public var phys: ScanPHYs

    /// Primary advertising PHYs, as the Scanning_PHYs bits of LE Set Extended Scan Parameters
    /// (Vol 4, Part E, 7.8.64). LE 2M is never a primary PHY: extended advertisements on it
    /// are announced on LE 1M or LE Coded and received through them.
    ///
    ///     ScanOptions(phys: [.le1M, .leCoded])
    public struct ScanPHYs: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let le1M = ScanPHYs(rawValue: 0x01)
        public static let leCoded = ScanPHYs(rawValue: 0x04)

        public var description: String {
            [(ScanPHYs.le1M, "1M"), (.leCoded, "Coded")].filter { contains($0.0) }.map(\.1).joined(separator: "+")
        }
    }

    /// What a scan does when the adapter is powered off.
    public enum PowerOffBehavior: Sendable, Hashable {
        /// The stream ends with `ScanError.adapterNotReady(.poweredOff)`; a scan started while
        /// powered off ends at once.
        case end
        /// The subscription stays, with no time limit, and the scan runs again when the adapter
        /// is powered on; `close()` still ends it.
        case wait
    }

    /// Defaults: active, interval 60 ms, window 30 ms, no duplicates, no duplicate interval,
    /// no lost events, no timeout, newest 256 events kept, 10 s for the adapter to be ready,
    /// ended by a power-off, LE 1M (no PHY: LE 1M).
    public init(mode: Mode = .active, interval: Duration = .milliseconds(60), window: Duration = .milliseconds(30),
                allowDuplicates: Bool = false, duplicateInterval: Duration? = nil, lostTimeout: Duration? = nil,
                timeout: Duration? = nil, bufferingPolicy: BufferingPolicy = .bufferingNewest(256),
                readyTimeout: Duration = .seconds(10), whenPoweredOff: PowerOffBehavior = .end, phys: ScanPHYs = .le1M) {
        self.phys = phys.isEmpty ? .le1M : phys
        self.readyTimeout = readyTimeout
        self.whenPoweredOff = whenPoweredOff
        self.mode = mode
        self.interval = interval
        self.window = window
        self.allowDuplicates = allowDuplicates
        self.duplicateInterval = duplicateInterval
        self.lostTimeout = lostTimeout
        self.timeout = timeout
        self.bufferingPolicy = bufferingPolicy
    }

    /// The controller parameters this subscriber asks for, clamped to the ranges of 7.8.10.
    var controllerParameters: ControllerScanParameters {
        let i = HCITimeUnit.slot.units(interval, in: 0x0004...0x4000)
        let w = HCITimeUnit.slot.units(window, in: 0x0004...i)
        return ControllerScanParameters(active: mode == .active, interval: i, window: w, phys: phys.isEmpty ? .le1M : phys)
    }
}

/// The scan the controller actually runs.
struct ControllerScanParameters: Hashable, Sendable, CustomStringConvertible {
    var active: Bool
    /// 0.625 ms units.
    var interval: UInt16
    var window: UInt16
    var phys: ScanOptions.ScanPHYs = .le1M

    /// Active if any is, the smallest interval, the largest window not above that interval,
    /// every PHY any asks for.
    static func union<S: Sequence>(_ all: S) -> ControllerScanParameters? where S.Element == ControllerScanParameters {
        var result: ControllerScanParameters?
        for p in all {
            guard var r = result else { result = p; continue }
            r.active = r.active || p.active
            r.interval = min(r.interval, p.interval)
            r.window = max(r.window, p.window)
            r.phys.formUnion(p.phys)
            result = r
        }
        if var r = result { r.window = min(r.window, r.interval); result = r }
        return result
    }

    var description: String {
        "\(active ? "active" : "passive"), interval \(Double(interval) * 0.625) ms, window \(Double(window) * 0.625) ms, \(phys)"
    }
}

extension StreamBufferingPolicy {
    /// A scan stream keeps at least one event.
    var atLeastOne: StreamBufferingPolicy {
        switch self {
        case .unbounded: return .unbounded
        case .bufferingNewest(let n): return .bufferingNewest(max(1, n))
        case .bufferingOldest(let n): return .bufferingOldest(max(1, n))
        case .endingWhenFull(let n): return .endingWhenFull(max(1, n))
        }
    }
}
