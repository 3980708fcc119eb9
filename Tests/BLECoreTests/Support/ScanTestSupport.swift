import BLECore
import BLEWire

/// Collects what a stream yields, in a task the test can cancel (which ends the stream the
/// way breaking out of `for await` does).
actor EventLog<E: Sendable> {
    private(set) var items: [E] = []
    private(set) var ended = false
    private(set) var error: (any Error)?
    private var waiters: [UInt64: (condition: @Sendable ([E], Bool) -> Bool, continuation: CheckedContinuation<Void, Never>)] = [:]
    private var nextWaiter: UInt64 = 0

    func add(_ e: E) { items.append(e); check() }
    func end(_ error: (any Error)?) { ended = true; self.error = error; check() }

    /// The items once `condition(items, ended)` holds, or whatever is there after `timeout` seconds.
    func wait(timeout: Double = 5, until condition: @escaping @Sendable ([E], Bool) -> Bool) async -> [E] {
        if condition(items, ended) { return items }
        let id = nextWaiter
        nextWaiter += 1
        await withCheckedContinuation { c in
            waiters[id] = (condition, c)
            Task {
                try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                self.expire(id)
            }
        }
        return items
    }

    private func expire(_ id: UInt64) { waiters.removeValue(forKey: id)?.continuation.resume() }

    private func check() {
        for (id, w) in waiters where w.condition(items, ended) {
            waiters[id] = nil
            w.continuation.resume()
        }
    }
}

final class Collected<E: Sendable>: Sendable {
    let log = EventLog<E>()
    let task: Task<Void, Never>

    init<S: AsyncSequence & Sendable>(_ stream: S) where S.Element == E {
        let log = self.log
        task = Task {
            do {
                for try await e in stream { await log.add(e) }
                await log.end(nil)
            } catch {
                await log.end(error)
            }
        }
    }

    init(_ stream: AsyncStream<E>) {
        let log = self.log
        task = Task {
            for await e in stream { await log.add(e) }
            await log.end(nil)
        }
    }

    func cancel() { task.cancel() }

    /// Items once at least `count` arrived (or the timeout passed).
    func first(_ count: Int, timeout: Double = 5) async -> [E] {
        await log.wait(timeout: timeout) { items, _ in items.count >= count }
    }

    /// Items once the stream ended (or the timeout passed), and the error it ended with.
    func end(timeout: Double = 5) async -> (items: [E], ended: Bool, error: (any Error)?) {
        let items = await log.wait(timeout: timeout) { _, ended in ended }
        return (items, await log.ended, await log.error)
    }
}

/// Advertising bytes and report events built from the specification's layouts.
enum Spec {
    /// "AA:BB:CC:DD:EE:FF" as the six octets HCI carries, least significant first.
    static func address(_ s: String) -> [UInt8] {
        s.split(separator: ":").map { UInt8($0, radix: 16) ?? 0 }.reversed()
    }

    // AD structures (Core Specification Supplement, Part A; Vol 3, Part C, 11): length, type, data.
    /// Flags (0x01): LE General Discoverable, BR/EDR Not Supported.
    static let flags: [UInt8] = [0x02, 0x01, 0x06]
    /// Complete List of 16-bit Service UUIDs (0x03).
    static func uuids16(_ u: UInt16...) -> [UInt8] { [UInt8(1 + 2 * u.count), 0x03] + u.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }
    /// Complete Local Name (0x09).
    static func name(_ n: String) -> [UInt8] { [UInt8(1 + n.utf8.count), 0x09] + Array(n.utf8) }
    /// Manufacturer Specific Data (0xFF): company identifier, then data.
    static func manufacturer(_ company: UInt16, _ data: [UInt8]) -> [UInt8] {
        [UInt8(3 + data.count), 0xFF, UInt8(company & 0xFF), UInt8(company >> 8)] + data
    }
    /// Service Data - 16-bit UUID (0x16).
    static func serviceData16(_ uuid: UInt16, _ data: [UInt8]) -> [UInt8] {
        [UInt8(3 + data.count), 0x16, UInt8(uuid & 0xFF), UInt8(uuid >> 8)] + data
    }

    struct Legacy {
        /// 0x00 ADV_IND, 0x01 ADV_DIRECT_IND, 0x02 ADV_SCAN_IND, 0x03 ADV_NONCONN_IND, 0x04 SCAN_RSP.
        var eventType: UInt8 = 0x00
        /// 0x00 public, 0x01 random.
        var addressType: UInt8 = 0x01
        var address: String
        var data: [UInt8]
        var rssi: Int8
    }

    /// HCI_LE_Advertising_Report (Vol 4, Part E, 7.7.65.2): Subevent_Code 0x02, Num_Reports,
    /// then per report Event_Type, Address_Type, Address, Data_Length, Data, RSSI.
    static func legacyReports(_ reports: [Legacy]) -> [UInt8] {
        var p: [UInt8] = [0x02, UInt8(reports.count)]
        for r in reports {
            p += [r.eventType, r.addressType] + address(r.address) + [UInt8(r.data.count)] + r.data + [UInt8(bitPattern: r.rssi)]
        }
        return p
    }

    struct Extended {
        /// Event_Type bits: 0 connectable, 1 scannable, 2 directed, 3 scan response, 4 legacy,
        /// 5-6 data status (0 complete, 1 more to come, 2 truncated).
        var eventType: UInt16 = 0x0001
        var addressType: UInt8 = 0x01
        var address: String
        var sid: UInt8 = 0x01
        var txPower: Int8 = 127
        var rssi: Int8
        var directAddressType: UInt8 = 0
        var directAddress: String = "00:00:00:00:00:00"
        var data: [UInt8]
    }

    /// HCI_LE_Extended_Advertising_Report (7.7.65.13): Subevent_Code 0x0D, Num_Reports, then
    /// per report Event_Type (2), Address_Type, Address, Primary_PHY, Secondary_PHY,
    /// Advertising_SID, TX_Power, RSSI, Periodic_Advertising_Interval (2), Direct_Address_Type,
    /// Direct_Address, Data_Length, Data.
    static func extendedReports(_ reports: [Extended]) -> [UInt8] {
        var p: [UInt8] = [0x0D, UInt8(reports.count)]
        for r in reports {
            p += [UInt8(r.eventType & 0xFF), UInt8(r.eventType >> 8), r.addressType] + address(r.address)
            p += [0x01, 0x00, r.sid, UInt8(bitPattern: r.txPower), UInt8(bitPattern: r.rssi), 0x00, 0x00]
            p += [r.directAddressType] + address(r.directAddress) + [UInt8(r.data.count)] + r.data
        }
        return p
    }

    /// HCI_LE_Directed_Advertising_Report (7.7.65.11): Subevent_Code 0x0B, Num_Reports, then
    /// Event_Type (0x01 ADV_DIRECT_IND), Address_Type, Address, Direct_Address_Type,
    /// Direct_Address, RSSI.
    static func directedReport(addressType: UInt8, address a: String, directAddressType: UInt8, directAddress d: String, rssi: Int8) -> [UInt8] {
        [0x0B, 0x01, 0x01, addressType] + address(a) + [directAddressType] + address(d) + [UInt8(bitPattern: rssi)]
    }

    // Scan commands (Vol 4, Part E, 7.8.10, 7.8.11, 7.8.64, 7.8.65), own address public,
    // filter policy "accept all".
    static func setScanParameters(active: Bool, interval: UInt16, window: UInt16) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x200B), parameters: [active ? 1 : 0, UInt8(interval & 0xFF), UInt8(interval >> 8),
                                                                         UInt8(window & 0xFF), UInt8(window >> 8), 0x00, 0x00])
    }
    /// LE_Scan_Enable, Filter_Duplicates 0x00.
    static func setScanEnable(_ on: Bool) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x200C), parameters: [on ? 1 : 0, 0x00])
    }
    /// Own_Address_Type, Scanning_Filter_Policy, Scanning_PHYs 0x01 (LE 1M), then Scan_Type,
    /// Scan_Interval, Scan_Window.
    static func setExtendedScanParameters(active: Bool, interval: UInt16, window: UInt16) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2041), parameters: [0x00, 0x00, 0x01, active ? 1 : 0, UInt8(interval & 0xFF), UInt8(interval >> 8),
                                                                         UInt8(window & 0xFF), UInt8(window >> 8)])
    }
    /// Enable, Filter_Duplicates 0x00, Duration 0x0000, Period 0x0000.
    static func setExtendedScanEnable(_ on: Bool) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2042), parameters: [on ? 1 : 0, 0x00, 0x00, 0x00, 0x00, 0x00])
    }
}

extension Array where Element == ScanEvent {
    /// Addresses of `.discovered` events, as printed.
    var discoveredAddresses: Set<String> {
        Set(compactMap { if case .discovered(let p) = $0 { return "\(p.address.address)" } else { return nil } })
    }
}
