import BLEWire

/// One subscriber of the shared scan: its filter, options, stream and what it has been told.
/// A class, so the per-report update of `known` mutates in place instead of copying the
/// table out of the subscribers dictionary. Only touched on the adapter executor.
final class ScanSubscriber {
    enum Sink {
        /// Events, held per transport read and released together (`Scanner.send`).
        case events(MulticastBuffer<ScanEvent>)
        /// Snapshot lists for UIs, emitted at most every `interval`.
        case snapshots(Broadcaster<[DiscoveredPeripheral]>, interval: Duration)

        func finish(_ error: (any Error)?) {
            switch self {
            case .events(let b): b.onSubscriberCountChange = nil; b.finish(throwing: error)
            case .snapshots(let b, _): b.onSubscriberCountChange = nil; b.finish()
            }
        }
    }

    let id: UInt64
    let filter: ScanFilter
    /// Filters that admit a new device into the shared table: the filter itself, or one per
    /// criterion when it has several (a service in the advertisement and a name in the scan
    /// response must both get a chance to be seen).
    let admission: [ScanFilter]
    /// More than one content criterion: a report that fails alone is checked against the
    /// device's merged data.
    let needsMergedCheck: Bool
    let options: ScanOptions
    let parameters: ControllerScanParameters
    let sink: Sink
    /// Devices this subscriber has been told about, with what it was told last.
    var known: [DeviceKey: Delivered] = [:]
    var lostTimer: (any ScheduledTimer)?
    var timeoutTimer: (any ScheduledTimer)?
    var snapshotTimer: (any ScheduledTimer)?
    /// Ends the subscription when the adapter is not powered on in time (`ScanOptions.readyTimeout`).
    var readyTimer: (any ScheduledTimer)?
    var snapshotDirty = false
    var lastSnapshot: ContinuousClock.Instant?

    init(id: UInt64, filter: ScanFilter, options: ScanOptions, sink: Sink) {
        self.id = id
        self.filter = filter
        self.options = options
        self.parameters = options.controllerParameters
        self.sink = sink
        var parts: [ScanFilter] = []
        if !filter.services.isEmpty { parts.append(ScanFilter(services: filter.services, minimumRSSI: filter.minimumRSSI)) }
        if let name = filter.nameContains, !name.isEmpty { parts.append(ScanFilter(nameContains: name, minimumRSSI: filter.minimumRSSI)) }
        if let m = filter.manufacturerID { parts.append(ScanFilter(minimumRSSI: filter.minimumRSSI, manufacturerID: m)) }
        needsMergedCheck = parts.count > 1
        admission = needsMergedCheck ? parts : [filter]
    }

    func cancelTimers() {
        lostTimer?.cancel()
        timeoutTimer?.cancel()
        snapshotTimer?.cancel()
        readyTimer?.cancel()
    }
}

/// What a subscriber was told last about one device.
struct Delivered {
    /// `DeviceRecord.version` and `contentVersion` then.
    var version: UInt64
    var contentVersion: UInt64
    /// The report's time (`DiscoveredPeripheral.lastSeen`), for `ScanOptions.duplicateInterval`.
    var time: ContinuousClock.Instant
}

/// Identifies a device in the scan table: address, address type, and for anonymous
/// advertising the Advertising_SID.
struct DeviceKey: Hashable {
    let raw: UInt64

    @inline(__always)
    init(address: BluetoothAddress, addressType: UInt8, sid: UInt8) {
        let anonymous = addressType == 0xFF
        raw = address.rawValue | UInt64(addressType) << 48 | (anonymous ? UInt64(sid) << 56 : 0)
    }
}

/// What the scanner keeps per device (bounded: see `Scanner.deviceLimit`).
struct DeviceRecord {
    var peripheral: DiscoveredPeripheral
    /// Bumped when the RSSI or the data changes; subscribers compare it for de-duplication.
    var version: UInt64 = 0
    /// Bumped when anything but the RSSI changes (data, event type, TX power, truncation).
    var contentVersion: UInt64 = 0
    /// The latest raw advertisement and scan response data, to skip decoding repeats.
    var lastAdvertisement: [UInt8]?
    var lastScanResponse: [UInt8]?
    /// `peripheral.advertisingData` encoded, for filters that need the merged data; built on
    /// first use after each change.
    var mergedBytes: [UInt8]?
}

/// An extended advertisement arriving in several reports (data status "incomplete, more data
/// to come"), per address and Advertising_SID.
struct FragmentKey: Hashable {
    let address: UInt64
    let addressType: UInt8
    let sid: UInt8
}

struct Fragment {
    var data: [UInt8]
    var sequence: UInt64
    /// More arrived than an advertisement can carry; the excess was dropped.
    var overflowed = false
}
