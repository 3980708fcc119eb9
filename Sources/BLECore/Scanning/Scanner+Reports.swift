@_spi(Internals) import BLEWire
#if canImport(Glibc)
import Glibc
#endif

/// Advertising reports: reassembly of extended fragments, the device table, and delivery to
/// each subscriber with its own filter and de-duplication.
extension Scanner {
    /// Takes the advertising report events (legacy, extended, directed); true when consumed.
    func handle(_ event: HCIEvent) -> Bool {
        switch event {
        case .leAdvertisingReport(let reports):
            guard !subscribers.isEmpty else { return true }
            for r in reports {
                let type = ExtendedAdvertisingEventType(legacy: r.eventType)
                r.data.withUnsafeBytes {
                    ingest(address: r.address, addressType: r.addressType, eventType: type, rssi: r.rssi,
                           data: $0, txPower: nil, sid: nil, truncated: false, direct: nil)
                }
            }
            return true
        case .leExtendedAdvertisingReport(let reports):
            guard !subscribers.isEmpty else { return true }
            for r in reports { extendedReport(r) }
            return true
        case .leDirectedAdvertisingReport(let reports):
            guard !subscribers.isEmpty else { return true }
            for r in reports {
                // ADV_DIRECT_IND: connectable and directed, no data (Vol 4, Part E, 7.7.65.11).
                let direct = LEAddress(r.directAddress, type: LEAddressType(rawValue: r.directAddressType) ?? .random)
                ingest(address: r.address, addressType: r.addressType, eventType: ExtendedAdvertisingEventType(legacy: 0x01), rssi: r.rssi,
                       data: UnsafeRawBufferPointer(start: nil, count: 0), txPower: nil, sid: nil, truncated: false, direct: direct)
            }
            return true
        default:
            return false
        }
    }

    /// Takes the reports of an LE Advertising Report event (`parameters`: Subevent_Code first)
    /// in place, without decoding it into arrays; false when nobody scans or the event is
    /// malformed (the host then decodes it as any other event, and counts it if it fails).
    func takeAdvertisingReports(_ parameters: UnsafeRawBufferPointer) -> Bool {
        guard !subscribers.isEmpty else { return false }
        do {
            // Checked whole first, so that a malformed event takes the usual path untouched.
            try HCIEvent.forEachAdvertisingReport(in: parameters) { _ in }
            try HCIEvent.forEachAdvertisingReport(in: parameters) { r in
                ingest(address: r.address, addressType: r.addressType, eventType: r.extendedEventType, rssi: r.rssi,
                       data: r.data, txPower: nil, sid: nil, truncated: false, direct: nil)
            }
            return true
        } catch {
            return false
        }
    }

    /// Joins fragments ("incomplete, more data to come") per address and SID, then ingests.
    func extendedReport(_ r: HCIEvent.LEExtendedAdvertisingReport) {
        let status = r.eventType.dataStatus
        let direct = r.eventType.contains(.directed)
            ? LEAddress(r.directAddress, type: LEAddressType(rawValue: r.directAddressType) ?? .random) : nil
        let sid: UInt8? = r.advertisingSID == 0xFF ? nil : r.advertisingSID
        let txPower: Int8? = r.txPower == 127 ? nil : r.txPower
        let key = FragmentKey(address: r.address.rawValue, addressType: r.addressType, sid: r.advertisingSID)
        if status == .incompleteMoreToCome {
            var f = fragments.removeValue(forKey: key) ?? Fragment(data: [], sequence: 0)
            fragmentSequence += 1
            f.sequence = fragmentSequence
            append(r.data, to: &f)
            if fragments.count >= fragmentLimit, let oldest = fragments.min(by: { $0.value.sequence < $1.value.sequence })?.key {
                logger.log(.debug, "dropping an unfinished extended advertisement: more than \(fragmentLimit) being reassembled")
                fragments[oldest] = nil
            }
            fragments[key] = f
            return
        }
        var data = r.data
        var truncated = status == .incompleteTruncated || status == .reserved
        if var f = fragments.removeValue(forKey: key) {
            append(r.data, to: &f)
            data = f.data
            truncated = truncated || f.overflowed
        }
        data.withUnsafeBytes {
            ingest(address: r.address, addressType: r.addressType, eventType: r.eventType, rssi: r.rssi,
                   data: $0, txPower: txPower, sid: sid, truncated: truncated, direct: direct)
        }
    }

    private func append(_ bytes: [UInt8], to f: inout Fragment) {
        let room = Self.maximumAdvertisingDataLength - f.data.count
        if bytes.count > room { f.overflowed = true }
        f.data.append(contentsOf: bytes.prefix(max(0, room)))
    }

    /// One complete report: filters on the raw bytes first, then updates the device and tells
    /// each subscriber what is new to it. `data` is copied only when it changed.
    func ingest(address: BluetoothAddress, addressType: UInt8, eventType: ExtendedAdvertisingEventType, rssi: Int8,
                data: UnsafeRawBufferPointer, txPower: Int8?, sid: UInt8?, truncated: Bool, direct: LEAddress?) {
        let key = DeviceKey(address: address, addressType: addressType, sid: sid ?? 0xFF)
        let now = scheduler.now()
        var isNew = false
        var index = devices.index(forKey: key)
        if index == nil {
            // A scan response alone is no sighting: it answers an advertisement the controller
            // reported first (Vol 6, Part B, 4.4.3.2), which the table did not take (it came
            // before a subscriber joined, as between two scans). A record made from it would
            // call the device not connectable; its next advertisement brings it in.
            guard !eventType.contains(.scanResponse) else { return }
            // The cheap gate: a device nobody could want is dropped before anything is decoded.
            let admitted = subscribers.values.contains { sub in sub.admission.contains { $0.matches(advertisingData: data, rssi: rssi) } }
            guard admitted else { return }
            if devices.count >= deviceLimit { evictOldest() }
            let type: LEAddressType = LEAddressType(rawValue: addressType) ?? .random
            var record = DeviceRecord(peripheral: DiscoveredPeripheral(
                address: LEAddress(address, type: type), advertisingData: AdvertisingData(), rssi: rssi,
                smoothedRSSI: Double(rssi), lastSeen: now, eventType: eventType, isConnectable: eventType.contains(.connectable),
                isAnonymous: addressType == 0xFF, isDataTruncated: false, directAddress: direct, txPower: nil,
                advertisingSID: sid))
            if addressType != 0xFF { record.peripheral.identityAddress = identity(of: LEAddress(address, type: type)) }
            devices[key] = record
            index = devices.index(forKey: key)
            isNew = true
        }
        guard let index else { return }
        // Updated in place: the record (and its peripheral's arrays) is not copied out and back.
        let stamp = Self.update(&devices.values[index], isNew: isNew, now: now, eventType: eventType, rssi: rssi, data: data,
                                txPower: txPower, sid: sid, truncated: truncated, direct: direct)
        if isNew, expiryTimer == nil { scheduleExpiry() }
        deliver(key, at: index, stamp: stamp, rawData: data, rssi: rssi)
    }

    /// Takes one report into a device's record and bumps its versions: `version` when the RSSI
    /// or anything else changed, `contentVersion` when anything but the RSSI did. Returns what a
    /// subscriber told of this report is to remember.
    private static func update(_ record: inout DeviceRecord, isNew: Bool, now: ContinuousClock.Instant, eventType: ExtendedAdvertisingEventType,
                               rssi: Int8, data: UnsafeRawBufferPointer, txPower: Int8?, sid: UInt8?, truncated: Bool, direct: LEAddress?) -> Delivered {
        let (rssiChanged, contentChanged) = takeReport(&record, now: now, eventType: eventType, rssi: rssi, data: data,
                                                       txPower: txPower, sid: sid, truncated: truncated, direct: direct)
        if rssiChanged || contentChanged || isNew { record.version &+= 1 }
        if contentChanged || isNew { record.contentVersion &+= 1 }
        return Delivered(version: record.version, contentVersion: record.contentVersion, time: now)
    }

    /// Takes one report into a device's record; whether the RSSI changed, and whether anything
    /// else did.
    private static func takeReport(_ record: inout DeviceRecord, now: ContinuousClock.Instant, eventType: ExtendedAdvertisingEventType,
                                   rssi: Int8, data: UnsafeRawBufferPointer, txPower: Int8?, sid: UInt8?, truncated: Bool, direct: LEAddress?) -> (rssi: Bool, content: Bool) {
        var changed = false
        var rssiChanged = false
        record.peripheral.lastSeen = now
        if rssi != 127 {
            if record.peripheral.rssi != rssi { rssiChanged = true }
            record.peripheral.rssi = rssi
            let smoothed = record.peripheral.smoothedRSSI
            record.peripheral.smoothedRSSI = smoothed == 127 ? Double(rssi) : smoothed + (Double(rssi) - smoothed) / 4
        }
        let isScanResponse = eventType.contains(.scanResponse)
        if !isScanResponse {
            if record.peripheral.eventType != eventType { changed = true }
            record.peripheral.eventType = eventType
            record.peripheral.isConnectable = eventType.contains(.connectable)
            record.peripheral.directAddress = direct
        }
        if let sid { record.peripheral.advertisingSID = sid }
        if record.peripheral.isDataTruncated != truncated { changed = true; record.peripheral.isDataTruncated = truncated }
        // Decode only data that differs from the previous report of the same kind.
        let previous = isScanResponse ? record.lastScanResponse : record.lastAdvertisement
        if !(previous.map { Self.equal($0, data) } ?? false) {
            let data = [UInt8](data)
            if isScanResponse { record.lastScanResponse = data } else { record.lastAdvertisement = data }
            if !data.isEmpty {
                var merged = record.peripheral.advertisingData.merging(AdvertisingData(bytes: data))
                if merged.structures.count > Self.mergedStructureLimit {
                    // Kinds the device stopped sending stay merged; past the bound the data is
                    // rebuilt from the latest advertisement and scan response, so a device that
                    // keeps changing company IDs or service data UUIDs cannot grow its record.
                    merged = AdvertisingData(bytes: record.lastAdvertisement ?? [])
                        .merging(AdvertisingData(bytes: record.lastScanResponse ?? []))
                }
                if merged != record.peripheral.advertisingData {
                    record.peripheral.advertisingData = merged
                    record.mergedBytes = nil
                    changed = true
                }
            }
        }
        let tx = txPower ?? record.peripheral.advertisingData.txPowerLevel
        if tx != record.peripheral.txPower { record.peripheral.txPower = tx; changed = true }
        return (rssiChanged, changed)
    }

    /// The stored data equals the report's (a report repeating its data is the common case).
    private static func equal(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { a in
            guard let pa = a.baseAddress, let pb = b.baseAddress else { return true }   // both empty
            return memcmp(pa, pb, a.count) == 0
        }
    }

    /// Offers the device at `index` to each subscriber. The record is copied out only for a
    /// subscriber that is told: most reports are filtered out, and a copy retains every array
    /// it holds.
    private func deliver(_ key: DeviceKey, at index: [DeviceKey: DeviceRecord].Index, stamp now: Delivered, rawData: UnsafeRawBufferPointer, rssi: Int8) {
        for sub in subscribers.values {
            let id = sub.id
            if let m = sub.filter.minimumRSSI, rssi != 127, rssi < m { continue }
            let delivered = sub.known[key]
            if let delivered {
                if let interval = sub.options.duplicateInterval, delivered.contentVersion == now.contentVersion,
                   now.time - delivered.time < interval { continue }
                if !sub.options.allowDuplicates, delivered.version == now.version { continue }
            } else {
                var pass = sub.filter.matches(advertisingData: rawData, rssi: rssi)
                if !pass, sub.needsMergedCheck {
                    if devices.values[index].mergedBytes == nil {
                        devices.values[index].mergedBytes = devices.values[index].peripheral.advertisingData.bytes
                    }
                    pass = devices.values[index].mergedBytes.map { sub.filter.matches(advertisingData: $0, rssi: rssi) } ?? false
                }
                guard pass else { continue }
            }
            sub.known[key] = now
            switch sub.sink {
            case .events(let b):
                let peripheral = devices.values[index].peripheral
                send(delivered == nil ? .discovered(peripheral) : .updated(peripheral), to: b)
            case .snapshots:
                snapshotChanged(id)
            }
            if delivered == nil, sub.options.lostTimeout != nil, sub.lostTimer == nil { scheduleLostCheck(id) }
        }
    }

    /// Holds `event` for one subscriber's consumer. Everything this job of the adapter queue
    /// produces (every report of one transport read) is released to the consumers together by
    /// one job queued after it, so a waiting consumer wakes once per read, not for its first
    /// event and again for the rest. The buffering policy applies as events are held.
    func send(_ event: ScanEvent, to buffer: MulticastBuffer<ScanEvent>) {
        buffer.hold(event)
        guard !releaseQueued else { return }
        releaseQueued = true
        executor.queue.async { [reference] in reference.scanner?.releaseEvents() }
    }

    /// Hands each subscriber's consumer the events held for it.
    func releaseEvents() {
        releaseQueued = false
        for sub in subscribers.values {
            if case .events(let b) = sub.sink { b.release() }
        }
    }

    /// The table is full: the device heard least recently goes, and its subscribers lose it.
    private func evictOldest() {
        guard let (key, record) = devices.min(by: { $0.value.peripheral.lastSeen < $1.value.peripheral.lastSeen }) else { return }
        devices[key] = nil
        logger.log(.debug, "device table full (\(deviceLimit)): dropping \(record.peripheral.address)")
        forget(key, record.peripheral)
    }

    /// A device left the table: the subscribers that know it lose it.
    private func forget(_ key: DeviceKey, _ peripheral: DiscoveredPeripheral) {
        for sub in subscribers.values where sub.known[key] != nil {
            sub.known[key] = nil
            switch sub.sink {
            case .events(let b): send(.lost(peripheral), to: b)
            case .snapshots: snapshotChanged(sub.id)
            }
        }
    }

    // MARK: - Table expiry

    /// How long the table keeps a device not heard: the longest lost timeout of the
    /// subscribers. Nil while one of them has none (then only `deviceLimit` bounds the table).
    var tableExpiry: Duration? {
        guard !subscribers.isEmpty else { return nil }
        var longest: Duration = .zero
        for sub in subscribers.values {
            guard let timeout = sub.options.lostTimeout else { return nil }
            longest = max(longest, timeout)
        }
        return longest
    }

    /// Arms the table check for when the oldest device may be due (at once: one expiry from now).
    func scheduleExpiry(after delay: Duration? = nil) {
        guard let expiry = tableExpiry, !devices.isEmpty else { return }
        expiryTimer?.cancel()
        // Checks at most eight times per expiry: devices due close together go in one pass.
        let wait = max(delay ?? expiry, expiry / 8)
        expiryTimer = scheduler.schedule(after: wait) { [reference] in
            reference.scanner?.expireDevices()
        }
    }

    /// Drops every device not heard for `tableExpiry` (its subscribers that still know it get
    /// `.lost`); re-arms for the next one due.
    func expireDevices() {
        expiryTimer = nil
        guard let expiry = tableExpiry else { return }
        let now = scheduler.now()
        var gone: [DeviceKey] = []
        var nextDue: Duration?
        for (key, record) in devices {
            let age = max(.zero, record.peripheral.lastSeen.duration(to: now))
            if age >= expiry { gone.append(key) } else { nextDue = min(nextDue ?? expiry, expiry - age) }
        }
        for key in gone {
            guard let record = devices.removeValue(forKey: key) else { continue }
            forget(key, record.peripheral)
        }
        if let nextDue { scheduleExpiry(after: nextDue) }
    }

    // MARK: - Lost devices

    private func scheduleLostCheck(_ id: UInt64, after delay: Duration? = nil) {
        guard let sub = subscribers[id], let timeout = sub.options.lostTimeout else { return }
        sub.lostTimer = scheduler.schedule(after: delay ?? timeout) { [reference] in
            reference.scanner?.checkLost(id)
        }
    }

    /// Reports every known device not heard for the lost timeout; re-arms for the next one due.
    func checkLost(_ id: UInt64) {
        guard let sub = subscribers[id], let timeout = sub.options.lostTimeout else { return }
        sub.lostTimer = nil
        let now = scheduler.now()
        var lost: [DiscoveredPeripheral] = []
        var nextDue: Duration?
        for key in Array(sub.known.keys) {
            guard let record = devices[key] else { sub.known[key] = nil; continue }
            let age = max(.zero, record.peripheral.lastSeen.duration(to: now))
            if age >= timeout {
                sub.known[key] = nil
                lost.append(record.peripheral)
            } else {
                nextDue = min(nextDue ?? timeout, timeout - age)
            }
        }
        if !lost.isEmpty {
            switch sub.sink {
            case .events(let b): for p in lost { send(.lost(p), to: b) }
            case .snapshots: snapshotChanged(id)
            }
        }
        if let nextDue { scheduleLostCheck(id, after: nextDue) }
    }

    // MARK: - Snapshots

    private func snapshotChanged(_ id: UInt64) {
        guard let sub = subscribers[id], case .snapshots(_, let interval) = sub.sink else { return }
        sub.snapshotDirty = true
        if sub.snapshotTimer == nil {
            let now = scheduler.now()
            let wait = sub.lastSnapshot.map { last in max(.zero, now.duration(to: last + interval)) } ?? .zero
            sub.snapshotTimer = scheduler.schedule(after: wait) { [reference] in
                reference.scanner?.emitSnapshot(id)
            }
        }
    }

    func emitSnapshot(_ id: UInt64) {
        guard let sub = subscribers[id], case .snapshots(let b, _) = sub.sink else { return }
        sub.snapshotTimer = nil
        guard sub.snapshotDirty else { return }
        sub.snapshotDirty = false
        sub.lastSnapshot = scheduler.now()
        b.yield(snapshot(of: sub))
    }

    /// The subscriber's devices, strongest (smoothed RSSI) first.
    func snapshot(of sub: ScanSubscriber) -> [DiscoveredPeripheral] {
        sub.known.keys.compactMap { devices[$0]?.peripheral }.sorted {
            $0.smoothedRSSI != $1.smoothedRSSI ? $0.smoothedRSSI > $1.smoothedRSSI : $0.address.address < $1.address.address
        }
    }
}
