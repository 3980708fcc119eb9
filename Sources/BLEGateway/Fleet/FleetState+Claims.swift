import BLECore
import BLEWire

/// The claims side of the fleet state: it feeds ``FleetClaims`` with the claims, statuses,
/// slots and presence the broker delivers, publishes what it decides, and tells the gateway
/// which devices it holds (`heldChanges`). While the broker is out of reach nothing is claimed;
/// after `grace` without it the held devices are dropped.
extension FleetState {
    /// `ble/GWID/status` of a gateway: `online`, or `offline` (a clean stop or its last will).
    func receiveStatus(_ message: MQTTMessage) async {
        let prefix = topics.prefix + "/"
        guard message.topic.hasPrefix(prefix), message.topic.hasSuffix("/status") else { return }
        let levels = message.topic.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 2, !levels[0].isEmpty else { return }
        switch message.text {
        case "online": claims.status(String(levels[0]), online: true)
        case "offline": claims.status(String(levels[0]), online: false)
        default: return
        }
        await settleClaims()
    }

    /// `ble/FLEET/gateways/GWID/slots`: a gateway's free slots, `0` to `64`.
    func receiveSlots(_ gateway: String, _ message: MQTTMessage) async {
        guard !gateway.isEmpty, message.payload.count <= 2, let n = Int(message.text), (0...64).contains(n) else { return }
        claims.slots(gateway, free: n)
        members.update(others: claims.free.keys)
        await settleClaims()
    }

    /// `ble/FLEET/claims/<ADDRESS>`; a payload that is not a claim is ignored.
    func receiveClaim(_ address: BluetoothAddress, _ message: MQTTMessage) async {
        guard let claim = FleetClaim(payload: message.payload) else { return }
        await publish(claims.received(claim, for: address))
        members.update(others: claims.free.keys)
        await settleClaims()
    }

    /// Claims what is due, publishes the claims and the free slots, tells the gateway what it
    /// holds, and arms the timer for the next claim that may fall due.
    func settleClaims() async {
        let now = clock.now
        let presence = self.presenceReports(now: now)
        await publish(claims.evaluate(now: now, rssi: presence))
        if claims.connected, lastFree != claims.freeSlots {
            lastFree = claims.freeSlots
            await publisher.enqueue(MQTTMessage(topic: topics.slots, text: String(claims.freeSlots), qos: .atLeastOnce, retain: true))
        }
        let held = claims.held
        if held != lastHeld {
            lastHeld = held
            heldFeed.yield(held)
        }
        guard let due = claims.deadline else { return }
        if let timer = claimTimer, timer.at <= due { return }
        claimTimer?.task.cancel()
        let wait = max(.milliseconds(1), due - now)
        claimTimer = (Task { [weak self] in
            do { try await Task.sleep(for: wait) } catch { return }
            await self?.claimTimerFired()
        }, due)
    }

    private func claimTimerFired() async {
        claimTimer = nil
        await settleClaims()
    }

    /// Follows the broker session: subscribes to the followed devices and claims again what is
    /// held at each connection; without the broker, stops claiming and drops the held devices after `grace`.
    func followBroker() async {
        for await up in publisher.connectionChanges {
            graceTimer?.cancel()
            graceTimer = nil
            if up {
                await subscribeFollowed()
                claims.connected = true
                lastFree = nil // the connection's first message announced every slot as free
                await publish(claims.reclaim(now: clock.now))
                await settleClaims()
            } else {
                claims.connected = false
                let grace = self.grace
                graceTimer = Task { [weak self] in
                    do { try await Task.sleep(for: grace) } catch { return }
                    await self?.graceEnded()
                }
            }
        }
    }

    private func graceEnded() async {
        graceTimer = nil
        claims.abandon()
        await settleClaims()
    }

    /// A clean stop: releases every held device (the others claim them at once) and announces
    /// no free slot, then stops claiming.
    func handOver() async {
        let released = claims.releaseAll()
        await publish(released)
        claims.connected = false
        await publisher.enqueue(MQTTMessage(topic: topics.slots, text: "0", qos: .atLeastOnce, retain: true))
        lastHeld = []
        heldFeed.yield([])
    }

    /// The link to a held device could not be made: released, and left to the others for
    /// ten claim delays, at least 10 s.
    func giveUp(_ address: BluetoothAddress) async {
        let avoid = max(.seconds(10), claims.claimDelay * 10)
        await publish(claims.giveUp(address, now: clock.now, avoidFor: avoid))
        await settleClaims()
    }

    /// Whether this gateway answers a fleet command for `address`: its holder does; for a device
    /// nobody holds (or no device), the online gateway with the smallest id.
    func answers(for address: BluetoothAddress?) -> Bool {
        if let address, let holder = claims.holder(of: address) { return holder == topics.gatewayID }
        // Gateways of the fleet (they announce their slots) that are online.
        let others = claims.online.filter { $0.value && claims.free[$0.key] != nil }.map(\.key)
        return others.allSatisfy { $0 > topics.gatewayID }
    }

    private func presenceReports(now: ContinuousClock.Instant) -> (BluetoothAddress) -> [String: Int] {
        var table: [BluetoothAddress: [String: Int]] = [:]
        for address in claims.wanted { table[address] = reports(address) }
        return { table[$0] ?? [:] }
    }

    private func publish(_ out: [(BluetoothAddress, FleetClaim)]) async {
        for (address, claim) in out {
            await publisher.enqueue(MQTTMessage(topic: topics.claim(address), payload: claim.json.bytes, qos: .atLeastOnce, retain: true))
        }
    }
}
