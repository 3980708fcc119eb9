import BLECore
import BLEWire

/// Presence of each device across the fleet: the smoothed RSSI every gateway reports, the
/// nearest gateway with hysteresis, `away` after `away` of silence from all of them.
///
/// This gateway smooths what it hears (exponential average, weight `smoothing` for a new
/// report) and reports it when it moved by `reportStep` dB or `away / 3` passed. A report counts
/// for `away + away / 3`, so a device goes away between `away` and `4/3 away` after the last
/// advertisement any gateway heard. The nearest
/// gateway changes only to one heard at least `margin` dB louder, so a device between two rooms
/// stays with the one it has. The aggregate goes out when its state or nearest gateway differs
/// from the last one known (published by any gateway). At most `capacity` devices are followed.
///
///     var p = FleetPresence(gatewayID: "gw1", away: .seconds(60)); let report = p.heard(a, rssi: -60, now: now)
struct FleetPresence {
    struct Device {
        var smoothed: Double?
        var reported: (rssi: Int, time: ContinuousClock.Instant)?
        /// Each gateway's last report, by gateway id.
        var reports: [String: (rssi: Int, time: ContinuousClock.Instant)] = [:]
        /// The last aggregate known: nil nothing yet, "" away, else the nearest gateway's id.
        var nearest: String?
    }

    let gatewayID: String
    let away: Duration
    let margin: Double = 8
    let reportStep: Double = 2
    let smoothing: Double = 0.25
    let capacity: Int
    /// Gateways one device keeps reports of, at most.
    let maximumGateways = FleetPresence.maximumAggregateGateways
    private(set) var devices: [BluetoothAddress: Device] = [:]

    init(gatewayID: String, away: Duration, capacity: Int = 10_000) {
        self.gatewayID = gatewayID
        self.away = away
        self.capacity = max(1, capacity)
    }

    /// This gateway heard `address` at `rssi`: the smoothed RSSI to report, when due.
    mutating func heard(_ address: BluetoothAddress, rssi: Int8, now: ContinuousClock.Instant) -> Int? {
        guard devices[address] != nil || devices.count < capacity else { return nil }
        var d = devices[address, default: Device()]
        let s = d.smoothed.map { $0 + smoothing * (Double(rssi) - $0) } ?? Double(rssi)
        d.smoothed = s
        let rounded = Int(s.rounded())
        var due = true
        if let r = d.reported { due = abs(s - Double(r.rssi)) >= reportStep || now - r.time >= away / 3 }
        if due { d.reported = (rounded, now) }
        devices[address] = d
        return due ? rounded : nil
    }

    /// A gateway's report (this one's too) arrived; returns the aggregate to publish, if any.
    mutating func report(_ address: BluetoothAddress, gateway: String, rssi: Int, now: ContinuousClock.Instant) -> JSONValue? {
        guard devices[address] != nil || devices.count < capacity else { return nil }
        var d = devices[address, default: Device()]
        guard d.reports[gateway] != nil || d.reports.count < maximumGateways else { return nil }
        d.reports[gateway] = (rssi, now)
        devices[address] = d
        return evaluate(address, now: now)
    }

    /// How long a report counts.
    var window: Duration { away + away / 3 }

    /// The RSSI each gateway (this one too) reports for `address` and that still counts.
    func reports(_ address: BluetoothAddress, now: ContinuousClock.Instant) -> [String: Int] {
        guard let d = devices[address] else { return [:] }
        return d.reports.filter { now - $0.value.time < window }.mapValues(\.rssi)
    }

    /// The fleet's aggregate for `address` as the broker showed it (nil nearest: away) with the
    /// RSSI it names: the other gateways' values are taken from it (an entry new here counts
    /// from now), this gateway's own stays. Returns the aggregate to publish when this gateway's
    /// own report disagrees with it, so each gateway corrects the fleet only with what it hears.
    mutating func announced(_ address: BluetoothAddress, nearest: String?, rssi: [(String, Int)] = [],
                            now: ContinuousClock.Instant) -> JSONValue? {
        guard devices[address] != nil || devices.count < capacity else { return nil }
        var d = devices[address, default: Device()]
        d.nearest = nearest ?? ""
        for (gateway, value) in rssi where gateway != gatewayID && (d.reports[gateway] != nil || d.reports.count < maximumGateways) {
            d.reports[gateway] = (value, d.reports[gateway]?.time ?? now)
        }
        devices[address] = d
        return evaluate(address, now: now)
    }

    /// The aggregate of `address` when its state or nearest gateway changed.
    mutating func evaluate(_ address: BluetoothAddress, now: ContinuousClock.Instant) -> JSONValue? {
        guard var d = devices[address] else { return nil }
        let live = d.reports.filter { now - $0.value.time < window }
        let next: String
        if let best = live.max(by: { $0.value.rssi != $1.value.rssi ? $0.value.rssi < $1.value.rssi : $0.key > $1.key }) {
            if let current = d.nearest, let held = live[current], Double(best.value.rssi) < Double(held.rssi) + margin {
                next = current
            } else {
                next = best.key
            }
        } else {
            next = ""
        }
        d.reports = live
        guard next != d.nearest, !(next.isEmpty && d.nearest == nil) else { devices[address] = d; return nil }
        d.nearest = next
        devices[address] = d
        return Self.payload(nearest: next, reports: live)
    }

    /// When the next device may go away: its last report plus `window`.
    func nextDeadline() -> ContinuousClock.Instant? {
        devices.values.compactMap { d in d.nearest?.isEmpty == false ? d.reports.values.map(\.time).max().map { $0 + window } : nil }.min()
    }

    /// The devices that went away by `now`, with their `away` aggregate.
    mutating func expire(now: ContinuousClock.Instant) -> [(BluetoothAddress, JSONValue)] {
        var out: [(BluetoothAddress, JSONValue)] = []
        for (address, d) in devices where d.nearest?.isEmpty == false {
            if let last = d.reports.values.map(\.time).max(), now - last < window { continue }
            if let message = evaluate(address, now: now) { out.append((address, message)) }
        }
        return out
    }

    /// `{"state":"present","nearest":"gw1","rssi":{"gw1":-52,"gw2":-71}}` or `{"state":"away"}`.
    static func payload(nearest: String, reports: [String: (rssi: Int, time: ContinuousClock.Instant)]) -> JSONValue {
        if nearest.isEmpty { return .object([("state", .string("away"))]) }
        let rssi = reports.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.int($0.value.rssi)) }
        return .object([("state", .string("present")), ("nearest", .string(nearest)), ("rssi", .object(rssi))])
    }

    /// The nearest gateway of an aggregate: its id, "" for away, nil when the text is neither.
    static func nearest(fromAggregate text: String) -> String? {
        if text == #"{"state":"away"}"# { return "" }
        let head = #"{"state":"present","nearest":""#
        guard text.hasPrefix(head) else { return nil }
        let rest = text.dropFirst(head.count)
        guard let end = rest.firstIndex(of: "\""), end > rest.startIndex else { return nil }
        return String(rest[..<end])
    }

    /// The `rssi` object of an aggregate, by gateway id; empty when the text has none or it is
    /// malformed.
    static func rssi(fromAggregate text: String) -> [(String, Int)] {
        guard let start = text.firstRange(of: #","rssi":{"#), text.hasSuffix("}}") else { return [] }
        let body = text[start.upperBound..<text.index(text.endIndex, offsetBy: -2)]
        var out: [(String, Int)] = []
        for pair in body.split(separator: ",") {
            guard pair.first == "\"", let colon = pair.lastIndex(of: ":"), colon > pair.index(after: pair.startIndex) else { return [] }
            let key = pair[pair.index(after: pair.startIndex)..<colon]
            guard key.last == "\"", let v = Int(pair[pair.index(after: colon)...]), (-127...20).contains(v) else { return [] }
            let id = key.dropLast()
            guard !id.isEmpty, !id.contains("\""), !id.contains("\\") else { return [] }
            out.append((String(id), v))
        }
        return out.count <= maximumAggregateGateways ? out : []
    }

    /// Gateways an aggregate names at most.
    static let maximumAggregateGateways = 64

    /// The RSSI of a gateway's report `{"rssi":-52}`, when it is one.
    static func rssi(fromReport text: String) -> Int? {
        guard text.hasPrefix(#"{"rssi":"#), text.hasSuffix("}"), text.utf8.count <= 16 else { return nil }
        guard let v = Int(text.dropFirst(8).dropLast()), (-127...20).contains(v) else { return nil }
        return v
    }
}
