import BLECore
import BLEWire
import FoundationEssentials

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
    mutating func announced(_ address: BluetoothAddress, nearest: String?, rssi: [Aggregate.Rssi] = [],
                            now: ContinuousClock.Instant) -> JSONValue? {
        guard devices[address] != nil || devices.count < capacity else { return nil }
        var d = devices[address, default: Device()]
        d.nearest = nearest ?? ""
        for r in rssi where r.gateway != gatewayID && (d.reports[r.gateway] != nil || d.reports.count < maximumGateways) {
            d.reports[r.gateway] = (r.value, d.reports[r.gateway]?.time ?? now)
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

    /// The smoothed RSSI this gateway last reported for `address`.
    func lastReported(_ address: BluetoothAddress) -> Int? { devices[address]?.reported?.rssi }

    /// Forgets `address` (this gateway no longer follows it): what it knew would not be kept
    /// up to date, so it could not say `away` at the right time.
    mutating func forget(_ address: BluetoothAddress) { devices[address] = nil }

    /// Whether `aggregate` says `away`.
    static func isAway(_ aggregate: JSONValue) -> Bool {
        guard case .object(let pairs) = aggregate else { return false }
        return pairs.contains { $0.0 == "state" && $0.1 == .string("away") }
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

    /// An aggregate as the broker delivers it: the nearest gateway ("" for away) and the RSSI
    /// it names, sorted by gateway id.
    struct Aggregate: Equatable {
        var nearest: String
        var rssi: [Rssi]

        struct Rssi: Equatable {
            var gateway: String
            var value: Int
        }
    }

    private struct AggregateWire: Decodable {
        var state: String
        var nearest: String?
        var rssi: [String: Int]?
    }

    /// Longest aggregate read: 64 gateways with ids of 64 bytes fit.
    static let maximumAggregateSize = 8192

    /// The aggregate in a message's payload; nil when it is not one (too long, not JSON, a
    /// state other than `present` or `away`, a nearest or gateway id that is no topic level, an
    /// RSSI out of -127...20, more than ``maximumAggregateGateways`` gateways).
    static func aggregate(_ payload: [UInt8]) -> Aggregate? {
        guard payload.count <= maximumAggregateSize, let wire = try? JSONDecoder().decode(AggregateWire.self, from: Data(payload)) else { return nil }
        switch wire.state {
        case "away":
            return Aggregate(nearest: "", rssi: [])
        case "present":
            guard let nearest = wire.nearest, !nearest.isEmpty, FleetClaim.isGatewayID(nearest) else { return nil }
            let rssi = wire.rssi ?? [:]
            guard rssi.count <= maximumAggregateGateways,
                  rssi.allSatisfy({ !$0.key.isEmpty && FleetClaim.isGatewayID($0.key) && (-127...20).contains($0.value) }) else { return nil }
            return Aggregate(nearest: nearest, rssi: rssi.sorted { $0.key < $1.key }.map { Aggregate.Rssi(gateway: $0.key, value: $0.value) })
        default:
            return nil
        }
    }

    /// Gateways an aggregate names at most.
    static let maximumAggregateGateways = 64

    private struct ReportWire: Decodable {
        var rssi: Int
    }

    /// The RSSI of a gateway's report `{"rssi":-52}`, when it is one (at most 32 bytes, an RSSI
    /// in -127...20).
    static func rssi(fromReport payload: [UInt8]) -> Int? {
        guard payload.count <= 32, let wire = try? JSONDecoder().decode(ReportWire.self, from: Data(payload)),
              (-127...20).contains(wire.rssi) else { return nil }
        return wire.rssi
    }
}
