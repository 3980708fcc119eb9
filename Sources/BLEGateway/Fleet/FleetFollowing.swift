import BLECore
import BLEWire

/// The devices whose fleet topics (``FleetTopics/subscriptions(of:)``) this gateway follows:
/// those it heard within `window` and the `pinned` ones (its configured devices, claimed
/// through presence). A device it stops hearing for `window` is left: the broker no longer
/// sends this gateway what the fleet does with it.
///
/// A device newly followed *awaits its state*: the broker sends the retained last packet and
/// presence of the device after the subscription, before the echo of this gateway's own first
/// presence report (one connection keeps its order), so the device's packets are held until
/// that echo (``ready(_:)``) or `stateWait` at most.
///
///     var f = FleetFollowing(window: .seconds(80)); if f.heard(a, now: now) { subscribe(a) }
struct FleetFollowing {
    let window: Duration
    let stateWait: Duration
    let capacity: Int
    /// Per device heard: when last, and since when it awaits its state (nil: it has it).
    private(set) var heard: [BluetoothAddress: (last: ContinuousClock.Instant, awaiting: ContinuousClock.Instant?)] = [:]
    /// Followed whether heard or not.
    private(set) var pinned: Set<BluetoothAddress> = []

    init(window: Duration, stateWait: Duration = FleetRoundTrip.maximum, capacity: Int = 10_000) {
        self.window = window
        self.stateWait = stateWait
        self.capacity = max(1, capacity)
    }

    /// Every device followed now.
    var followed: Set<BluetoothAddress> { pinned.union(heard.keys) }

    func isFollowed(_ address: BluetoothAddress) -> Bool { heard[address] != nil || pinned.contains(address) }

    /// This gateway heard `address`; true when it starts following it (subscribe now). Beyond
    /// `capacity` devices heard, a new one is not followed.
    mutating func heard(_ address: BluetoothAddress, now: ContinuousClock.Instant) -> Bool {
        if let entry = heard[address] {
            heard[address] = (now, entry.awaiting)
            return false
        }
        guard heard.count < capacity else { return false }
        let new = !pinned.contains(address)
        // A pinned device was subscribed to since the session began: its state is in.
        heard[address] = (now, new ? now : nil)
        return new
    }

    /// Until when a packet of `address` heard `now` waits for the device's state; nil when
    /// the state is in, waited for long enough, or the device is not followed.
    func awaitingState(_ address: BluetoothAddress, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard let since = heard[address]?.awaiting, now - since < stateWait else { return nil }
        return since + stateWait
    }

    /// The state of `address` arrived; true when the device was awaiting it.
    mutating func ready(_ address: BluetoothAddress) -> Bool {
        guard let entry = heard[address], entry.awaiting != nil else { return false }
        heard[address] = (entry.last, nil)
        return true
    }

    /// The pinned devices become `pinned`; returns those to subscribe to and those to leave.
    mutating func pin(_ next: Set<BluetoothAddress>) -> (follow: [BluetoothAddress], leave: [BluetoothAddress]) {
        let follow = next.subtracting(pinned).filter { heard[$0] == nil }
        let leave = pinned.subtracting(next).filter { heard[$0] == nil }
        pinned = next
        return (Array(follow), Array(leave))
    }

    /// When the next heard device may be left: its last hearing plus `window`.
    func nextDeadline() -> ContinuousClock.Instant? {
        heard.values.map(\.last).min().map { $0 + window }
    }

    /// The devices not heard for `window` by `now`, no longer counted as heard; those among
    /// them that are not pinned are left (unsubscribe).
    mutating func expire(now: ContinuousClock.Instant) -> [(address: BluetoothAddress, leave: Bool)] {
        var out: [(BluetoothAddress, Bool)] = []
        for (address, entry) in heard where now - entry.last >= window {
            out.append((address, !pinned.contains(address)))
        }
        for (address, _) in out { heard[address] = nil }
        return out
    }
}
