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
        #expect(f.heard(a, now: t0))
        #expect(!f.heard(a, now: t0 + .seconds(30)))
        #expect(f.heard(b, now: t0 + .seconds(40)))
        #expect(f.followed == [a, b])
        #expect(f.nextDeadline() == t0 + .seconds(110))
        #expect(f.expire(now: t0 + .seconds(109)).isEmpty)
        let left = f.expire(now: t0 + .seconds(110))
        #expect(left.map(\.address) == [a] && left.map(\.leave) == [true])
        #expect(f.followed == [b] && f.nextDeadline() == t0 + .seconds(120))
        // Heard again: followed anew, awaiting its state again.
        #expect(f.heard(a, now: t0 + .seconds(111)))
        #expect(f.awaitingState(a, now: t0 + .seconds(111)) == t0 + .seconds(116))
    }

    @Test func aNewDeviceAwaitsItsStateUntilItArrivesOrTheWaitEnds() {
        var f = FleetFollowing(window: .seconds(80), stateWait: .seconds(5))
        #expect(f.awaitingState(a, now: t0) == nil)
        _ = f.heard(a, now: t0)
        _ = f.heard(b, now: t0)
        #expect(f.awaitingState(a, now: t0 + .seconds(1)) == t0 + .seconds(5))
        #expect(f.awaitingState(b, now: t0 + .seconds(5)) == nil)
        #expect(f.ready(a))
        #expect(!f.ready(a))
        #expect(f.awaitingState(a, now: t0 + .seconds(1)) == nil)
    }

    @Test func pinnedDevicesStayFollowedAndHaveTheirState() {
        var f = FleetFollowing(window: .seconds(80), stateWait: .seconds(5))
        let first = f.pin([a])
        #expect(first.follow == [a] && first.leave.isEmpty)
        #expect(f.isFollowed(a))
        // Subscribed since the session began: no new subscription and no wait at its first hearing.
        #expect(!f.heard(a, now: t0))
        #expect(f.awaitingState(a, now: t0) == nil)
        #expect(f.expire(now: t0 + .seconds(80)).map(\.leave) == [false])
        #expect(f.isFollowed(a))
        // Unpinned while heard: it stays until the window ends; unpinned unheard: left at once.
        _ = f.heard(b, now: t0)
        let second = f.pin([b])
        #expect(second.follow.isEmpty && second.leave == [a])
        #expect(f.pin([]).leave.isEmpty && f.followed == [b])
    }

    @Test func beyondItsCapacityANewDeviceIsNotFollowed() {
        var f = FleetFollowing(window: .seconds(80), stateWait: .seconds(5), capacity: 1)
        #expect(f.heard(a, now: t0))
        #expect(!f.heard(b, now: t0))
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
