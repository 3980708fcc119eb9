import BLECore
import BLEWire

/// The following side of the fleet state: each gateway subscribes to the topics of the devices
/// it hears and of its configured ones (``FleetFollowing``), not to every device of the fleet,
/// so the broker sends it a share of the fleet's traffic: about the devices it hears times the
/// gateways that hear each. Subscriptions are QoS 0, so the broker keeps their messages in the
/// order of this gateway's own.
extension FleetState {
    /// Subscribes to the topics of `address`. Without a session the call fails; every followed
    /// device is subscribed to again at the next connection (`followBroker`).
    func subscribe(_ address: BluetoothAddress) {
        for topic in topics.subscriptions(of: address) { _ = try? publisher.client.subscribe(topic, qos: .atMostOnce) }
    }

    func unsubscribe(_ address: BluetoothAddress) {
        for topic in topics.subscriptions(of: address) { _ = try? publisher.client.unsubscribe(topic) }
    }

    /// A new session: every followed device again (subscriptions do not outlive a session).
    /// A device still awaiting its state gets its report again: the one sent before may have
    /// gone out before the subscriptions.
    func subscribeFollowed() async {
        let now = clock.now
        for address in following.followed {
            subscribe(address)
            if following.awaitingState(address, now: now) != nil { await sendOwnReport(address) }
        }
    }

    /// The configured devices are followed whether heard or not (their claims go by presence).
    func pin(_ wanted: Set<BluetoothAddress>) async {
        let (follow, leave) = following.pin(wanted)
        for address in follow { subscribe(address) }
        for address in leave {
            unsubscribe(address)
            await forget(address)
        }
    }

    /// Leaves the devices not heard for the following window, each at its deadline, until the
    /// task is cancelled.
    func expireFollowing() async {
        while !Task.isCancelled {
            let wait = following.nextDeadline().map { max(.milliseconds(1), $0 - clock.now) } ?? following.window
            do { try await Task.sleep(for: wait) } catch { return }
            for (address, leave) in following.expire(now: clock.now) {
                awaiting[address] = nil
                guard leave else { continue }
                unsubscribe(address)
                await forget(address)
            }
        }
    }

    /// Holds `messages` of a device that awaits its state; false when it does not (or no more
    /// can be held), and the caller goes on.
    func holdUntilState(_ key: FleetPacketKey, _ messages: [MQTTMessage], now: ContinuousClock.Instant) -> Bool {
        guard let until = following.awaitingState(key.address, now: now), heldBack.count < Self.maximumHeldBack else { return false }
        guard heldBack[key] == nil else { return true }
        let due = heldBackQueues[Self.maximumRank].append(key, due: until)
        heldBack[key] = (due, messages)
        awaiting[key.address, default: []].append(key)
        return true
    }

    /// The echo of this gateway's own report of `address`: the device's retained packet and
    /// presence came before it, so this gateway's report now counts in presence and what was
    /// held goes on to the ranking (a packet the fleet published already was dropped when its
    /// `packets` message came).
    func stateArrived(_ address: BluetoothAddress) async {
        guard following.ready(address) else { return }
        await applyOwnReport(address)
        for key in awaiting.removeValue(forKey: address) ?? [] {
            guard let entry = heldBack.removeValue(forKey: key) else { continue }
            await publish(address, packet: key.packet, entry.messages)
        }
    }
}
