import BLECore
import BLEWire

/// Which gateway holds each configured device, decided by every gateway alike from the retained
/// claims (``FleetClaim``), the gateways' statuses and free slots, and the RSSI each reports.
///
/// A device is *free* when it has no claim, its claim is a release, or its holder's status is
/// `offline` (its last will). For a free device every gateway ranks the gateways that are online,
/// have a free slot and hear the device: loudest RSSI first, then the smaller id. The gateway
/// ranked `k` claims it (epoch one above the last) `claimDelay * k` after the device became free,
/// and no sooner than `claimDelay` after it was first heard: the best-placed gateway claims first,
/// the next ones only when it did not. Two claims of one epoch are settled by
/// ``FleetClaim/beats(_:)``; a later epoch replaces an earlier one. A held device does not move
/// while its holder is online. Returned messages are what this gateway must publish (retained,
/// QoS 1).
///
///     var c = FleetClaims(gatewayID: "gw1", slots: 3, claimDelay: .seconds(1), wanted: [a])
///     let out = c.evaluate(now: now) { _ in ["gw1": -50] }
struct FleetClaims {
    let gatewayID: String
    let slots: Int
    let claimDelay: Duration
    /// The devices of the config: the only ones claimed.
    var wanted: Set<BluetoothAddress>
    /// The last claim accepted per device.
    private(set) var claims: [BluetoothAddress: FleetClaim] = [:]
    /// The epochs of the claims this gateway made since it started: a claim naming it with
    /// another epoch is stale (from before a restart or a partition) and is released.
    private var made: [BluetoothAddress: UInt64] = [:]
    /// Other gateways' statuses: true `online`, false `offline`.
    private(set) var online: [String: Bool] = [:]
    /// Other gateways' free slots, from their latest claim or slots message.
    private(set) var free: [String: Int] = [:]
    private var freeSince: [BluetoothAddress: ContinuousClock.Instant] = [:]
    private var heardSince: [BluetoothAddress: ContinuousClock.Instant] = [:]
    /// False while the broker is out of reach: nothing is claimed.
    var connected = true
    /// Devices this gateway gave up (its link could not be made), until when it leaves them to
    /// the others.
    private var avoid: [BluetoothAddress: ContinuousClock.Instant] = [:]
    /// No claim before this: the broker's retained state is still coming in.
    private var quietUntil: ContinuousClock.Instant?
    /// When the next claim may become due.
    private(set) var deadline: ContinuousClock.Instant?

    init(gatewayID: String, slots: Int, claimDelay: Duration, wanted: Set<BluetoothAddress>) {
        self.gatewayID = gatewayID
        self.slots = slots
        self.claimDelay = claimDelay
        self.wanted = wanted
    }

    /// The devices this gateway holds.
    var held: Set<BluetoothAddress> {
        Set(claims.compactMap { $0.value.holder == gatewayID && made[$0.key] == $0.value.epoch ? $0.key : nil })
    }

    /// This gateway's free slots.
    var freeSlots: Int { max(0, slots - held.count) }

    /// The live holder of `address`, if any.
    func holder(of address: BluetoothAddress) -> String? {
        guard let c = claims[address], !c.isRelease, isLive(c.holder) else { return nil }
        return c.holder
    }

    func isLive(_ gateway: String) -> Bool { gateway == gatewayID || online[gateway] != false }

    /// A claim message arrived (this gateway's own echo too). Returns what to publish: this
    /// gateway's claim again when a weaker one of its epoch or one of an older epoch came after
    /// it (so the retained message names the holder), or a release of a stale claim naming this
    /// gateway.
    mutating func received(_ claim: FleetClaim, for address: BluetoothAddress) -> [(BluetoothAddress, FleetClaim)] {
        if claim.holder != gatewayID, !claim.isRelease { slots(claim.holder, free: claim.free) }
        guard let current = claims[address] else {
            guard claims.count < Self.capacity else { return [] }
            claims[address] = claim
            return staleRelease(address)
        }
        if claim.epoch > current.epoch || (claim.epoch == current.epoch && claim.beats(current)) {
            claims[address] = claim
        } else if claim != current, current.holder == gatewayID, made[address] == current.epoch {
            // A weaker claim of this epoch, or one of an older epoch (a gateway that claimed
            // before the broker's retained claims reached it), came last: it is the retained
            // message now, so the holder publishes its claim again.
            return [(address, current)]
        }
        return staleRelease(address)
    }

    /// A claim naming this gateway that it did not make is released with the next epoch.
    private mutating func staleRelease(_ address: BluetoothAddress) -> [(BluetoothAddress, FleetClaim)] {
        guard let c = claims[address], c.holder == gatewayID, made[address] != c.epoch, connected else { return [] }
        let release = FleetClaim(holder: "", rssi: -127, free: freeSlots, epoch: c.epoch + 1)
        claims[address] = release
        return [(address, release)]
    }

    /// A gateway's status (`ble/GWID/status`).
    mutating func status(_ gateway: String, online up: Bool) {
        guard gateway != gatewayID, online[gateway] != nil || online.count < Self.maximumGateways else { return }
        online[gateway] = up
    }

    /// A gateway's free slots (`ble/FLEET/gateways/GWID/slots`).
    mutating func slots(_ gateway: String, free n: Int) {
        guard gateway != gatewayID, free[gateway] != nil || free.count < Self.maximumGateways else { return }
        free[gateway] = n
    }

    /// Devices whose claim is followed, at most; a claim of one more is ignored.
    static let capacity = 10_000
    /// Gateways whose status and slots are followed, at most.
    static let maximumGateways = 1_024

    /// Claims the free devices this gateway is due to claim by `now`; `rssi` gives the RSSI each
    /// gateway reports for a device (this one's included). Sets `deadline`.
    mutating func evaluate(now: ContinuousClock.Instant, rssi: (BluetoothAddress) -> [String: Int]) -> [(BluetoothAddress, FleetClaim)] {
        deadline = nil
        guard connected else { return [] }
        var out: [(BluetoothAddress, FleetClaim)] = []
        var mine = freeSlots
        for address in wanted.sorted(by: { $0.rawValue < $1.rawValue }) {
            let heard = rssi(address)
            if heard.isEmpty { heardSince[address] = nil } else if heardSince[address] == nil { heardSince[address] = now }
            guard holder(of: address) == nil else {
                freeSince[address] = nil
                continue
            }
            let since = freeSince[address] ?? now
            freeSince[address] = since
            if let until = avoid[address] {
                if now < until {
                    deadline = min(deadline ?? until, until)
                    continue
                }
                avoid[address] = nil
            }
            guard let first = heardSince[address], mine > 0, let own = heard[gatewayID] else { continue }
            let ranked = heard.filter { $0.key == gatewayID || (isLive($0.key) && online[$0.key] != nil && (free[$0.key] ?? 0) > 0) }
                .sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            guard let rank = ranked.firstIndex(where: { $0.key == gatewayID }) else { continue }
            let due = max(since, first + claimDelay, quietUntil ?? since) + claimDelay * rank
            guard now >= due else {
                deadline = min(deadline ?? due, due)
                continue
            }
            let claim = FleetClaim(holder: gatewayID, rssi: own, free: mine - 1, epoch: (claims[address]?.epoch ?? 0) + 1)
            claims[address] = claim
            made[address] = claim.epoch
            freeSince[address] = nil
            mine -= 1
            out.append((address, claim))
        }
        return out
    }

    /// Releases every held device (a clean stop hands them over), with the next epoch.
    mutating func releaseAll() -> [(BluetoothAddress, FleetClaim)] {
        let out = held.sorted { $0.rawValue < $1.rawValue }.map { address in
            (address, FleetClaim(holder: "", rssi: -127, free: slots, epoch: (claims[address]?.epoch ?? 0) + 1))
        }
        for (address, release) in out {
            claims[address] = release
            made[address] = nil
        }
        return out
    }

    /// Back on the broker after an outage: every device still held is claimed again with the
    /// next epoch, since the others took this gateway's claims for void while its status was
    /// `offline` (or the broker lost them). Claims naming it that it let go are released when the
    /// broker delivers them again (`received`), so against the broker's state, not the one
    /// from before the outage. Nothing new is claimed for four claim delays from `now`: the
    /// retained claims and statuses come in first.
    mutating func reclaim(now: ContinuousClock.Instant) -> [(BluetoothAddress, FleetClaim)] {
        quietUntil = now + claimDelay * 4
        var out: [(BluetoothAddress, FleetClaim)] = []
        var left = slots
        for address in held.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let old = claims[address] else { continue }
            left -= 1
            let claim = FleetClaim(holder: gatewayID, rssi: old.rssi, free: max(0, left), epoch: old.epoch + 1)
            claims[address] = claim
            made[address] = claim.epoch
            out.append((address, claim))
        }
        return out
    }

    /// This gateway could not make the link to a device it holds: it releases the device with
    /// the next epoch and leaves it to the others for `avoidFor`; after that it may claim it
    /// again when nobody else did.
    mutating func giveUp(_ address: BluetoothAddress, now: ContinuousClock.Instant, avoidFor: Duration) -> [(BluetoothAddress, FleetClaim)] {
        guard held.contains(address), let old = claims[address] else { return [] }
        let release = FleetClaim(holder: "", rssi: -127, free: freeSlots + 1, epoch: old.epoch + 1)
        claims[address] = release
        made[address] = nil
        avoid[address] = now + avoidFor
        return [(address, release)]
    }

    /// The grace period after losing the broker ended: this gateway holds nothing any more, and
    /// its retained claims, stale now, are released once the broker is back.
    mutating func abandon() {
        made = [:]
    }
}
