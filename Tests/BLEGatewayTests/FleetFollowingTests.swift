import BLECore
@testable import BLEGateway
import Foundation
import Testing
import BLEWire

/// Which devices a fleet gateway subscribes to (FleetFollowing), on instants chosen by the test.
@Suite struct FleetFollowingTests {
    let a = BluetoothAddress(rawValue: 0xC0_11_22_33_44_55)
    let b = BluetoothAddress(rawValue: 0xC0_11_22_33_44_66)
    let t0 = ContinuousClock.now

    @Test func aDeviceIsFollowedFromItsFirstHearingUntilTheWindowWithoutIt() {
        var f = FleetFollowing(window: .seconds(80), stateWait: .seconds(5))
        #expect(f.nextDeadline() == nil)
        let (first, again, other) = (f.heard(a, now: t0), f.heard(a, now: t0 + .seconds(30)), f.heard(b, now: t0 + .seconds(40)))
        #expect(first && !again && other)
        #expect(f.followed == [a, b])
        #expect(f.nextDeadline() == t0 + .seconds(110))
        let early = f.expire(now: t0 + .seconds(109))
        #expect(early.isEmpty)
        let left = f.expire(now: t0 + .seconds(110))
        #expect(left.map(\.address) == [a] && left.map(\.leave) == [true])
        #expect(f.followed == [b] && f.nextDeadline() == t0 + .seconds(120))
        // Heard again: followed anew, awaiting its state again.
        let back = f.heard(a, now: t0 + .seconds(111))
        #expect(back)
        #expect(f.awaitingState(a, now: t0 + .seconds(111)) == t0 + .seconds(116))
    }

    @Test func aNewDeviceAwaitsItsStateUntilItArrivesOrTheWaitEnds() {
        var f = FleetFollowing(window: .seconds(80), stateWait: .seconds(5))
        #expect(f.awaitingState(a, now: t0) == nil)
        _ = f.heard(a, now: t0)
        _ = f.heard(b, now: t0)
        #expect(f.awaitingState(a, now: t0 + .seconds(1)) == t0 + .seconds(5))
        #expect(f.awaitingState(b, now: t0 + .seconds(5)) == nil)
        let (ready, readyAgain) = (f.ready(a), f.ready(a))
        #expect(ready && !readyAgain)
        #expect(f.awaitingState(a, now: t0 + .seconds(1)) == nil)
    }

    @Test func pinnedDevicesStayFollowedAndHaveTheirState() {
        var f = FleetFollowing(window: .seconds(80), stateWait: .seconds(5))
        let first = f.pin([a])
        #expect(first.follow == [a] && first.leave.isEmpty)
        #expect(f.isFollowed(a))
        // Subscribed since the session began: no new subscription and no wait at its first hearing.
        let subscribe = f.heard(a, now: t0)
        #expect(!subscribe)
        #expect(f.awaitingState(a, now: t0) == nil)
        let expired = f.expire(now: t0 + .seconds(80))
        #expect(expired.map(\.leave) == [false])
        #expect(f.isFollowed(a))
        // Unpinned while heard: it stays until the window ends; unpinned unheard: left at once.
        _ = f.heard(b, now: t0)
        let second = f.pin([b])
        #expect(second.follow.isEmpty && second.leave == [a])
        let third = f.pin([])
        #expect(third.leave.isEmpty && f.followed == [b])
    }

    @Test func beyondItsCapacityANewDeviceIsNotFollowed() {
        var f = FleetFollowing(window: .seconds(80), stateWait: .seconds(5), capacity: 1)
        let (first, second) = (f.heard(a, now: t0), f.heard(b, now: t0))
        #expect(first && !second)
        #expect(!f.isFollowed(b) && f.awaitingState(b, now: t0) == nil)
    }

    @Test func topicsOfADevice() {
        let t = FleetTopics(prefix: "ble", fleet: "house", gatewayID: "gw1")
        #expect(t.packets(a) == "ble/house/packets/C01122334455")
        #expect(t.subscriptions(of: a) == ["ble/house/packets/C01122334455", "ble/house/presence/C01122334455/#"])
        #expect(t.subscriptions == ["ble/house/claims/+", "ble/house/gateways/+/slots", "ble/+/status", "ble/house/commands"])
        let last = JSONValue.object(FleetState.packetMessage(gateway: "gw1", packet: 0x0123_4567_89AB_CDEF))
        #expect(last.text == #"{"gateway":"gw1","packet":"0123456789ABCDEF"}"#)
        #expect(FleetState.packet(fromDeviceMessage: last.bytes) == 0x0123_4567_89AB_CDEF)
        #expect(FleetPresence.isAway(.object([("state", .string("away"))])))
        #expect(!FleetPresence.isAway(.object([("state", .string("present")), ("nearest", .string("gw1"))])))
    }
}
