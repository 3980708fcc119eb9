import BLECore
import BLEWire

/// Simulated peripherals and what a scan sees of them: LE Advertising Reports for a legacy
/// scan, LE Extended Advertising Reports for an extended one (Vol 4, Part E, 7.7.65.2 and
/// 7.7.65.13; Vol 6, Part B, 2.3 for the PDU types).
extension VirtualController {
    struct ScanParameters {
        var legacyActive = false
        var extendedActive = false
    }

    struct ScanState {
        let extended: Bool
        let active: Bool
        let filterDuplicates: Bool
        /// Duplicate filter: what was reported per address and PDU kind (scan response or not).
        var reported: [DuplicateKey: [UInt8]] = [:]
        var timers: [LEAddress: any ScheduledTimer] = [:]
    }

    struct DuplicateKey: Hashable {
        let address: LEAddress
        let scanResponse: Bool
    }

    /// Adds (or replaces, by address) a device. During a scan it starts advertising at once;
    /// a pending connection attempt to it completes if it is connectable.
    public func addPeripheral(_ peripheral: SimulatedPeripheral) {
        onQueue {
            peripherals.removeAll { $0.address == peripheral.address }
            peripherals.append(peripheral)
            if scan != nil { startAdvertising(peripheral.address) }
            tryConnectPending()
            changed()
        }
    }

    /// Removes a device: it stops advertising; an existing link stays until disconnected.
    public func removePeripheral(_ address: LEAddress) {
        onQueue {
            peripherals.removeAll { $0.address == address }
            scan?.timers.removeValue(forKey: address)?.cancel()
            changed()
        }
    }

    /// In `.immediate` time: every peripheral advertises once more now (manual time advertises
    /// by itself as time advances).
    public func advertiseNow() {
        onQueue {
            guard scan != nil else { return }
            for p in peripherals { advertisingEvent(p.address) }
        }
    }

    func startScan(extended: Bool, active: Bool, filterDuplicates: Bool) {
        scanGeneration &+= 1
        scan = ScanState(extended: extended, active: active, filterDuplicates: filterDuplicates)
        for p in peripherals { startAdvertising(p.address) }
    }

    func stopScan() {
        scan?.timers.values.forEach { $0.cancel() }
        scan = nil
    }

    /// The first advertising event of `address` one interval from now (at once in immediate time).
    func startAdvertising(_ address: LEAddress) {
        guard let p = peripheral(address) else { return }
        scan?.timers.removeValue(forKey: address)?.cancel()
        guard clock != nil else { return advertisingEvent(address) }
        scheduleAdvertising(address, after: p.advertisingInterval)
    }

    func scheduleAdvertising(_ address: LEAddress, after interval: Duration) {
        let generation = scanGeneration
        let timer = after(max(interval, .microseconds(1))) { vc in
            guard vc.scan != nil, vc.scanGeneration == generation, let p = vc.peripheral(address) else { return }
            vc.advertisingEvent(address)
            vc.scheduleAdvertising(address, after: p.advertisingInterval)
        }
        if let timer { scan?.timers[address] = timer }
    }

    /// One advertising event of `address`, and the scan response when the scan is active.
    func advertisingEvent(_ address: LEAddress) {
        guard let s = scan, let p = peripheral(address) else { return }
        if s.extended {
            reportExtended(p, scanResponse: false)
            if s.active, p.isScannable { reportExtended(p, scanResponse: true) }
        } else {
            guard !p.usesExtendedAdvertising else { return } // a legacy scanner does not see extended PDUs
            let type: UInt8 = p.isConnectable ? 0x00 : (p.isScannable ? 0x02 : 0x03) // ADV_IND, ADV_SCAN_IND, ADV_NONCONN_IND
            reportLegacy(p, eventType: type, data: Array(p.advertisingData.prefix(31)), scanResponse: false)
            if s.active, p.isScannable {
                reportLegacy(p, eventType: 0x04, data: Array(p.scanResponseData.prefix(31)), scanResponse: true) // SCAN_RSP
            }
        }
        changed()
    }

    /// False when the duplicate filter suppresses this report (same address, kind and data).
    func passesDuplicateFilter(_ p: SimulatedPeripheral, scanResponse: Bool, data: [UInt8]) -> Bool {
        guard let s = scan, s.filterDuplicates else { return true }
        let key = DuplicateKey(address: p.address, scanResponse: scanResponse)
        if s.reported[key] == data { return false }
        scan?.reported[key] = data
        return true
    }

    func reportLegacy(_ p: SimulatedPeripheral, eventType: UInt8, data: [UInt8], scanResponse: Bool) {
        guard passesDuplicateFilter(p, scanResponse: scanResponse, data: data) else { return }
        send(.leAdvertisingReport([.init(eventType: eventType, addressType: p.address.type.rawValue, address: p.address.address, data: data, rssi: p.rssi)]))
    }

    func reportExtended(_ p: SimulatedPeripheral, scanResponse: Bool) {
        let data = scanResponse ? p.scanResponseData : p.advertisingData
        guard passesDuplicateFilter(p, scanResponse: scanResponse, data: data) else { return }
        var flags: ExtendedAdvertisingEventType = []
        if p.usesExtendedAdvertising {
            // An extended advertiser is connectable or scannable, not both (Vol 6, Part B, 2.3.4.9).
            if p.isConnectable { flags.insert(.connectable) } else if p.isScannable { flags.insert(.scannable) }
        } else {
            flags.insert(.legacy)
            if p.isConnectable { flags.formUnion([.connectable, .scannable]) } else if p.isScannable { flags.insert(.scannable) }
        }
        if scanResponse { flags.insert(.scanResponse) }
        let chunk = p.usesExtendedAdvertising ? max(1, options.extendedReportFragmentSize) : 31
        let payload = p.usesExtendedAdvertising ? data : Array(data.prefix(31))
        var offset = 0
        repeat {
            let end = min(offset + chunk, payload.count)
            let status: ExtendedAdvertisingEventType.DataStatus = end < payload.count ? .incompleteMoreToCome : .complete
            let report = HCIEvent.LEExtendedAdvertisingReport(
                eventType: ExtendedAdvertisingEventType(flags, dataStatus: status), addressType: p.address.type.rawValue,
                address: p.address.address, primaryPHY: 1, secondaryPHY: p.usesExtendedAdvertising ? 1 : 0,
                advertisingSID: p.usesExtendedAdvertising ? 0 : 0xFF, txPower: p.txPower ?? 127, rssi: p.rssi,
                data: Array(payload[offset..<end]))
            send(.leExtendedAdvertisingReport([report]))
            offset = end
        } while offset < payload.count
    }
}
