import BLECore
import FoundationEssentials
import BLEWire

/// One retained message on `ble/FLEET/claims/<ADDRESS>`: the gateway that holds the device,
/// the RSSI it hears it at, its free slots after the claim, and the claim's epoch.
/// `{"holder":"gw1","rssi":-52,"free":2,"epoch":7}`; a release names no holder:
/// `{"holder":"","rssi":-127,"free":3,"epoch":8}`.
///
///     let claim = FleetClaim(holder: "gw1", rssi: -52, free: 2, epoch: 7); publish(claim.json)
struct FleetClaim: Sendable, Hashable {
    /// The holder's gateway id; empty for a release.
    var holder: String
    var rssi: Int
    var free: Int
    /// Raised by one for every new claim or release of the device.
    var epoch: UInt64

    var isRelease: Bool { holder.isEmpty }

    /// Whether `self` wins over `other` at the same epoch: any claim over a release, then the
    /// louder RSSI, then the smaller gateway id. Every gateway decides the same from the same two
    /// messages, in whichever order they came.
    func beats(_ other: FleetClaim) -> Bool {
        if isRelease || other.isRelease { return !isRelease && other.isRelease }
        if rssi != other.rssi { return rssi > other.rssi }
        return holder < other.holder
    }

    var json: JSONValue {
        .object([("holder", .string(holder)), ("rssi", .int(rssi)), ("free", .int(free)), ("epoch", .int(Int(clamping: epoch)))])
    }

    /// Longest claim message read; anything longer is not a claim.
    static let maximumSize = 256

    private struct Wire: Decodable {
        var holder: String
        var rssi: Int
        var free: Int
        var epoch: UInt64
    }

    /// The claim in a message's payload; nil when it is not one (too long, not the JSON object
    /// above, a holder that is no topic level, values out of range).
    init?(payload: [UInt8]) {
        guard payload.count <= Self.maximumSize, let wire = try? JSONDecoder().decode(Wire.self, from: Data(payload)) else { return nil }
        guard Self.isGatewayID(wire.holder),
              (-127...20).contains(wire.rssi), (0...64).contains(wire.free), wire.epoch <= UInt64(Int.max) else { return nil }
        self.init(holder: wire.holder, rssi: wire.rssi, free: wire.free, epoch: wire.epoch)
    }

    /// Whether `id` can be a gateway id in a fleet message: at most 64 bytes, one topic level,
    /// no quote or backslash. Empty passes (a release's holder).
    static func isGatewayID(_ id: String) -> Bool {
        id.utf8.count <= 64 && !id.contains { "/+#\"\\".contains($0) }
    }

    init(holder: String, rssi: Int, free: Int, epoch: UInt64) {
        self.holder = holder
        self.rssi = rssi
        self.free = free
        self.epoch = epoch
    }
}
