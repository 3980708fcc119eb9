import BLECore
@testable import BLEGateway
import Testing
import BLEWire

/// The claim protocol on its own, with made-up times: the claim message, the rule that settles
/// two claims of one epoch in either order, who claims a free device and when, a dead holder,
/// a stale claim, a clean hand-over and a broker outage.
@Suite struct FleetClaimTests {
    let a = BluetoothAddress(rawValue: 0xC0_11_22_33_44_01)
    let b = BluetoothAddress(rawValue: 0xC0_11_22_33_44_02)
    let t0 = ContinuousClock.now
    let delay = Duration.seconds(1)

    /// Gateway `id` with 2 slots that knows gw1, gw2 and gw3 online with 2 free slots each.
    func claims(_ id: String, slots: Int = 2, wanted: Set<BluetoothAddress>? = nil) -> FleetClaims {
        var c = FleetClaims(gatewayID: id, slots: slots, claimDelay: delay, wanted: wanted ?? [a])
        for g in ["gw1", "gw2", "gw3"] where g != id {
            c.status(g, online: true)
            c.slots(g, free: 2)
        }
        return c
    }

    @Test func theClaimMessageRoundTripsAndHostileOnesAreRefused() throws {
        let claim = FleetClaim(holder: "gw1", rssi: -52, free: 2, epoch: 7)
        #expect(claim.json.bytes == Array(#"{"holder":"gw1","rssi":-52,"free":2,"epoch":7}"#.utf8))
        #expect(FleetClaim(payload: Array(#"{"holder":"gw1","rssi":-52,"free":2,"epoch":7}"#.utf8)) == claim)
        #expect(FleetClaim(payload: Array(#"{"holder":"","rssi":-127,"free":3,"epoch":8}"#.utf8))?.isRelease == true)
        for bad in [#"{"holder":"gw1","rssi":-52,"free":2"#, #"{"holder":"gw/1","rssi":-52,"free":2,"epoch":7}"#,
                    #"{"holder":"gw1","rssi":-200,"free":2,"epoch":7}"#, #"{"holder":"gw1","rssi":-52,"free":65,"epoch":7}"#,
                    #"{"holder":"gw1","rssi":-52,"free":2,"epoch":-1}"#, #"{"holder":"gw1","rssi":-52,"free":2,"epoch":18446744073709551615}"#,
                    "[]", "", "offline"] {
            #expect(FleetClaim(payload: Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(FleetClaim(payload: Array(#"{"holder":""#.utf8) + Array(repeating: UInt8(ascii: "g"), count: 300) + Array(#"","rssi":1,"free":1,"epoch":1}"#.utf8)) == nil)
    }

    @Test func twoClaimsOfOneEpochGiveTheSameHolderInEitherOrder() {
        let near = FleetClaim(holder: "gw2", rssi: -50, free: 1, epoch: 1)
        let far = FleetClaim(holder: "gw1", rssi: -70, free: 1, epoch: 1)
        let tie = FleetClaim(holder: "gw3", rssi: -50, free: 1, epoch: 1)
        for order in [[near, far, tie], [far, tie, near], [tie, near, far]] {
            var c = claims("gw9")
            for claim in order { _ = c.received(claim, for: a) }
            #expect(c.holder(of: a) == "gw2", "\(order)")
        }
        // A later epoch wins whatever its RSSI; an older one changes nothing.
        var c = claims("gw9")
        _ = c.received(near, for: a)
        _ = c.received(FleetClaim(holder: "gw1", rssi: -90, free: 1, epoch: 2), for: a)
        _ = c.received(near, for: a)
        #expect(c.holder(of: a) == "gw1")
    }

    @Test func theWinnerPublishesItsClaimAgainWhenAWeakerOneCameLast() {
        var c = claims("gw2")
        _ = c.evaluate(now: t0) { _ in ["gw2": -50, "gw1": -70] }
        let out = c.evaluate(now: t0 + delay) { _ in ["gw2": -50, "gw1": -70] }
        #expect(out.map(\.1) == [FleetClaim(holder: "gw2", rssi: -50, free: 1, epoch: 1)])
        #expect(c.held == [a])
        // gw1's claim of the same epoch reached the broker after this one: it is retained there now.
        let again = c.received(FleetClaim(holder: "gw1", rssi: -70, free: 1, epoch: 1), for: a)
        #expect(again.map(\.1) == [FleetClaim(holder: "gw2", rssi: -50, free: 1, epoch: 1)])
        #expect(c.held == [a])
        // A restarted gateway claimed before the retained claims reached it: an older epoch, retained last.
        _ = c.received(FleetClaim(holder: "gw2", rssi: -50, free: 1, epoch: 1), for: a)
        let newer = c.reclaim(now: t0 + delay * 2)
        #expect(newer.map(\.1) == [FleetClaim(holder: "gw2", rssi: -50, free: 1, epoch: 2)])
        #expect(c.received(FleetClaim(holder: "gw3", rssi: -40, free: 1, epoch: 1), for: a).map(\.1) == newer.map(\.1))
        #expect(c.held == [a] && c.holder(of: a) == "gw2")
    }

    @Test func theNearestWithAFreeSlotClaimsFirstAndTheNextOnlyWhenItDoesNot() {
        var gw1 = claims("gw1"), gw2 = claims("gw2")
        let heard = ["gw1": -70, "gw2": -50]
        // Heard just now: nobody claims before the claim delay (the others' reports come in).
        #expect(gw2.evaluate(now: t0) { _ in heard }.isEmpty)
        #expect(gw2.deadline == t0 + delay)
        #expect(gw1.evaluate(now: t0) { _ in heard }.isEmpty)
        #expect(gw1.deadline == t0 + delay * 2)
        let claim = gw2.evaluate(now: t0 + delay) { _ in heard }
        #expect(claim.map(\.1) == [FleetClaim(holder: "gw2", rssi: -50, free: 1, epoch: 1)])
        _ = gw1.received(claim[0].1, for: a)
        #expect(gw1.evaluate(now: t0 + delay * 3) { _ in heard }.isEmpty)
        #expect(gw1.holder(of: a) == "gw2" && gw1.held.isEmpty)

        // gw2 has no free slot: gw1 is first among those with one.
        var gw1b = claims("gw1")
        gw1b.slots("gw2", free: 0)
        _ = gw1b.evaluate(now: t0) { _ in heard }
        #expect(gw1b.evaluate(now: t0 + delay) { _ in heard }.map(\.1) == [FleetClaim(holder: "gw1", rssi: -70, free: 1, epoch: 1)])
        // A gateway that does not hear the device never claims it.
        var gw3 = claims("gw3")
        #expect(gw3.evaluate(now: t0 + delay * 10) { _ in heard }.isEmpty)
    }

    @Test func aDeadHoldersDevicesAreClaimedAtOnceWithTheNextEpoch() {
        var gw1 = claims("gw1")
        let heard = ["gw1": -70, "gw2": -50]
        _ = gw1.received(FleetClaim(holder: "gw2", rssi: -50, free: 1, epoch: 4), for: a)
        #expect(gw1.evaluate(now: t0 + delay * 5) { _ in heard }.isEmpty)
        // gw2's last will: its claim is void; gw1, heard long ago, claims now.
        gw1.status("gw2", online: false)
        let out = gw1.evaluate(now: t0 + delay * 6) { _ in heard }
        #expect(out.map(\.1) == [FleetClaim(holder: "gw1", rssi: -70, free: 1, epoch: 5)])
        #expect(gw1.held == [a] && gw1.freeSlots == 1)
    }

    @Test func slotsBoundTheClaimsAndDevicesGoInAddressOrder() {
        var gw1 = claims("gw1", slots: 1, wanted: [a, b])
        _ = gw1.evaluate(now: t0) { _ in ["gw1": -60] }
        let out = gw1.evaluate(now: t0 + delay) { _ in ["gw1": -60] }
        #expect(out.map(\.0) == [a] && gw1.freeSlots == 0)
        #expect(gw1.evaluate(now: t0 + delay * 10) { _ in ["gw1": -60] }.isEmpty)
    }

    @Test func aStaleClaimNamingThisGatewayIsReleased() {
        var gw1 = claims("gw1")
        // Retained from before a restart: gw1 does not hold it, so it releases it with the next epoch.
        let out = gw1.received(FleetClaim(holder: "gw1", rssi: -60, free: 1, epoch: 3), for: a)
        #expect(out.map(\.1) == [FleetClaim(holder: "", rssi: -127, free: 2, epoch: 4)])
        #expect(gw1.held.isEmpty && gw1.holder(of: a) == nil)
    }

    @Test func aCleanStopReleasesAndAnOutageClaimsAgainOrAbandons() {
        var gw1 = claims("gw1")
        _ = gw1.evaluate(now: t0) { _ in ["gw1": -60] }
        _ = gw1.evaluate(now: t0 + delay) { _ in ["gw1": -60] }
        #expect(gw1.held == [a])
        // Back on the broker with the link still up: claimed again, one epoch on.
        #expect(gw1.reclaim(now: t0 + delay).map(\.1) == [FleetClaim(holder: "gw1", rssi: -60, free: 1, epoch: 2)])
        // Without the broker nothing is claimed; after the grace period nothing is held.
        var cut = gw1
        cut.connected = false
        cut.abandon()
        #expect(cut.held.isEmpty && cut.evaluate(now: t0 + delay * 9) { _ in ["gw1": -60] }.isEmpty)
        // Its own retained claim comes back with the broker: stale now, so released.
        cut.connected = true
        #expect(cut.received(FleetClaim(holder: "gw1", rssi: -60, free: 1, epoch: 2), for: a).map(\.1)
                == [FleetClaim(holder: "", rssi: -127, free: 2, epoch: 3)])
        // A clean stop releases what is held.
        #expect(gw1.releaseAll().map(\.1) == [FleetClaim(holder: "", rssi: -127, free: 2, epoch: 3)])
        #expect(gw1.held.isEmpty)
    }

    @Test func aDeviceGivenUpGoesToTheNextAndComesBackOnlyAfterTheAvoidPeriod() {
        var gw1 = claims("gw1")
        let heard = ["gw1": -50, "gw2": -70]
        _ = gw1.evaluate(now: t0) { _ in heard }
        _ = gw1.evaluate(now: t0 + delay) { _ in heard }
        #expect(gw1.held == [a])
        #expect(gw1.giveUp(a, now: t0 + delay * 2, avoidFor: .seconds(10)).map(\.1) == [FleetClaim(holder: "", rssi: -127, free: 2, epoch: 2)])
        #expect(gw1.held.isEmpty && gw1.holder(of: a) == nil)
        #expect(gw1.evaluate(now: t0 + delay * 5) { _ in heard }.isEmpty)
        #expect(gw1.deadline == t0 + delay * 2 + .seconds(10))
        // gw2 (ranked second everywhere) waited one claim delay more and took it.
        var gw2 = claims("gw2")
        _ = gw2.received(FleetClaim(holder: "", rssi: -127, free: 2, epoch: 2), for: a)
        _ = gw2.evaluate(now: t0 + delay * 2) { _ in heard }
        #expect(gw2.evaluate(now: t0 + delay * 4) { _ in heard }.map(\.1) == [FleetClaim(holder: "gw2", rssi: -70, free: 1, epoch: 3)])
        // Nobody took it: gw1 claims it again once the avoid period is over.
        #expect(gw1.evaluate(now: t0 + delay * 12) { _ in heard }.map(\.1) == [FleetClaim(holder: "gw1", rssi: -50, free: 1, epoch: 3)])
    }
}
