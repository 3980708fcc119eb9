import BLECore
@testable import BLEGateway
import Testing
import BLEWire

/// The fleet's duplicate rule and presence, on their own with made-up times: FNV-1a from its
/// reference test vectors (Landon Curt Noll's FNV page: "" 0xCBF29CE484222325, "a"
/// 0xAF63DC4C8601EC8C, "foobar" 0x85944171F73967E8).
@Suite struct FleetLogicTests {
    let a = BluetoothAddress(rawValue: 0xC0_11_22_33_44_01)
    let t0 = ContinuousClock.now

    @Test func fnv1a64MatchesTheReferenceVectors() {
        #expect(FleetDeviceView.fnv1a64([]) == 0xCBF2_9CE4_8422_2325)
        #expect(FleetDeviceView.fnv1a64(Array("a".utf8)) == 0xAF63_DC4C_8601_EC8C)
        #expect(FleetDeviceView.fnv1a64(Array("foobar".utf8)) == 0x8594_4171_F739_67E8)
    }

    @Test func aPacketIsPublishedOncePerIntervalWhoeverPublishedIt() {
        var view = FleetDeviceView(interval: .seconds(10))
        #expect(view.decide(a, packet: 1, now: t0) == .publish)
        #expect(view.decide(a, packet: 1, now: t0 + .seconds(1)) == .skip)
        // Another gateway published packet 2: this one drops it, then its interval runs from there.
        view.published(a, packet: 2, now: t0 + .seconds(2))
        #expect(view.decide(a, packet: 2, now: t0 + .seconds(3)) == .skip)
        #expect(view.decide(a, packet: 2, now: t0 + .seconds(12)) == .periodic)
        #expect(view.decide(a, packet: 3, now: t0 + .seconds(12)) == .publish)
        // Packet 2 heard late by a gateway after packet 3 went out: still a duplicate.
        #expect(view.decide(a, packet: 2, now: t0 + .seconds(13)) == .skip)
    }

    @Test func theBoundForgetsOnlyDevicesPastTheInterval() {
        var view = FleetDeviceView(interval: .seconds(10), capacity: 2)
        let b = BluetoothAddress(rawValue: 2), c = BluetoothAddress(rawValue: 3)
        #expect(view.decide(a, packet: 1, now: t0) == .publish)
        #expect(view.decide(b, packet: 1, now: t0 + .seconds(5)) == .publish)
        #expect(view.decide(c, packet: 1, now: t0 + .seconds(11)) == .publish)
        #expect(view.last.count == 2 && view.last[a] == nil)
        #expect(view.decide(b, packet: 1, now: t0 + .seconds(12)) == .skip)
        // Four packets per device: the oldest goes.
        for packet in 2...5 { #expect(view.decide(b, packet: UInt64(packet), now: t0 + .seconds(12)) == .publish) }
        #expect(view.last[b]?.map(\.packet) == [2, 3, 4, 5])
    }

    @Test func fleetMessagesParseOnlyTheirOwnForm() {
        let m = FleetState.deviceMessage(.object([("address", .string("x"))]), gateway: "gw2", packet: 0xAB)
        #expect(m.text == #"{"address":"x","gateway":"gw2","packet":"00000000000000AB"}"#)
        #expect(FleetState.packet(fromDeviceMessage: m.bytes) == 0xAB)
        #expect(FleetState.packet(fromDeviceMessage: Array(#"{"packet":"00AB"}"#.utf8)) == nil)
        #expect(FleetState.packet(fromDeviceMessage: Array(#"{"a":1,"packet":"0000000000000ZZZ"}"#.utf8)) == nil)
        #expect(FleetState.packet(fromDeviceMessage: []) == nil)
        #expect(FleetPresence.rssi(fromReport: Array(#"{"rssi":-52}"#.utf8)) == -52)
        #expect(FleetPresence.rssi(fromReport: Array(#"{ "rssi" : -52 }"#.utf8)) == -52)
        #expect(FleetPresence.rssi(fromReport: Array(#"{"rssi":-999}"#.utf8)) == nil)
        #expect(FleetPresence.rssi(fromReport: Array(#"{"rssi":}"#.utf8)) == nil)
        #expect(FleetPresence.rssi(fromReport: Array(#"{"rssi":-52,"pad":"\#(String(repeating: "x", count: 40))"}"#.utf8)) == nil)
        #expect(FleetPresence.aggregate(Array(#"{"state":"present","nearest":"gw1","rssi":{"gw1":-50}}"#.utf8))
            == .init(nearest: "gw1", rssi: [.init(gateway: "gw1", value: -50)]))
        #expect(FleetPresence.aggregate(Array(#"{"state":"away"}"#.utf8)) == .init(nearest: "", rssi: []))
        #expect(FleetPresence.aggregate(Array(#"{"state":"present","nearest":""#.utf8)) == nil)
        #expect(FleetPresence.aggregate(Array(#"{"state":"present","nearest":""}"#.utf8)) == nil)
        #expect(FleetPresence.aggregate(Array(#"{"state":"gone"}"#.utf8)) == nil)
        #expect(FleetPresence.aggregate(Array(#"{"state":"present","nearest":"a/b"}"#.utf8)) == nil)
        #expect(FleetState.address("C01122334401") == a)
        #expect(FleetState.address("C0112233440") == nil)
        #expect(FleetState.address("C0112233440G") == nil)
    }

    @Test func nearestHoldsWithinTheMarginAndMovesBeyondIt() {
        var p = FleetPresence(gatewayID: "gw0", away: .seconds(3))
        #expect(p.report(a, gateway: "gw1", rssi: -60, now: t0)?.text == #"{"state":"present","nearest":"gw1","rssi":{"gw1":-60}}"#)
        // Equal, then 7 dB louder: gw1 stays; 8 dB: gw0.
        #expect(p.report(a, gateway: "gw0", rssi: -60, now: t0 + .seconds(1)) == nil)
        #expect(p.report(a, gateway: "gw0", rssi: -53, now: t0 + .seconds(1)) == nil)
        #expect(p.report(a, gateway: "gw0", rssi: -52, now: t0 + .seconds(1))?.text
            == #"{"state":"present","nearest":"gw0","rssi":{"gw0":-52,"gw1":-60}}"#)
        // Silence: no report counts after away + away/3 = 4 s.
        #expect(p.nextDeadline() == t0 + .seconds(5))
        #expect(p.expire(now: t0 + .milliseconds(4999)).isEmpty)
        let gone = p.expire(now: t0 + .seconds(5))
        #expect(gone.map(\.0) == [a] && gone.map(\.1.text) == [#"{"state":"away"}"#])
        #expect(p.nextDeadline() == nil)
    }

    @Test func ownReportsAreSmoothedAndSentOnAStepOrAfterAThirdOfAway() {
        var p = FleetPresence(gatewayID: "gw0", away: .seconds(3))
        #expect(p.heard(a, rssi: -60, now: t0) == -60)
        // -60 + 0.25 * (-50 + 60) = -57.5: a 2.5 dB step, reported as -58.
        #expect(p.heard(a, rssi: -50, now: t0) == -58)
        // -57.5 + 0.25 * (-60 + 57.5) = -58.125: under 2 dB from -58, not yet due.
        #expect(p.heard(a, rssi: -60, now: t0 + .milliseconds(500)) == nil)
        #expect(p.heard(a, rssi: -58, now: t0 + .seconds(1)) == -58)
    }

    @Test func anAggregateFromTheBrokerIsCorrectedWhenReportsDisagree() {
        var p = FleetPresence(gatewayID: "gw0", away: .seconds(3))
        #expect(p.report(a, gateway: "gw0", rssi: -40, now: t0) != nil)
        #expect(p.report(a, gateway: "gw2", rssi: -80, now: t0) == nil)
        // gw2 published itself as nearest before it had gw0's report.
        #expect(p.announced(a, nearest: "gw2", now: t0)?.text == #"{"state":"present","nearest":"gw0","rssi":{"gw0":-40,"gw2":-80}}"#)
        #expect(p.announced(a, nearest: "gw0", now: t0) == nil)
    }

    @Test func anAggregateTeachesTheOtherGatewaysValues() {
        // gw1 never got gw0's report; gw0's aggregate carries it, so gw1 agrees instead of correcting.
        var p = FleetPresence(gatewayID: "gw1", away: .seconds(3))
        #expect(p.report(a, gateway: "gw1", rssi: -60, now: t0) != nil)
        // Keys in another order than the gateways write them, and spaces: JSON all the same.
        let text = #"{"rssi": {"gw1": -60, "gw0": -40}, "nearest": "gw0", "state": "present"}"#
        let aggregate = FleetPresence.aggregate(Array(text.utf8))
        #expect(aggregate?.rssi.map { "\($0.gateway)=\($0.value)" } == ["gw0=-40", "gw1=-60"])
        #expect(p.announced(a, nearest: "gw0", rssi: aggregate?.rssi ?? [], now: t0) == nil)
        // Hostile or broken aggregates are not read at all.
        #expect(FleetPresence.aggregate(Array(#"{"state":"present","nearest":"gw0","rssi":{"gw0":x}}"#.utf8)) == nil)
        #expect(FleetPresence.aggregate(Array(#"{"state":"present","nearest":"gw0","rssi":{"":-4}}"#.utf8)) == nil)
        #expect(FleetPresence.aggregate(Array(#"{"state":"present","nearest":"gw0","rssi":{"gw0":-400}}"#.utf8)) == nil)
        #expect(FleetPresence.aggregate(Array(#"{"state":"present","nearest":"gw0","rssi":{"g\"w":-40}}"#.utf8)) == nil)
        let many = (0...64).map { #""gw\#($0)":-50"# }.joined(separator: ",")
        #expect(FleetPresence.aggregate(Array(#"{"state":"present","nearest":"gw0","rssi":{\#(many)}}"#.utf8)) == nil)
        #expect(FleetPresence.aggregate([UInt8](repeating: 0x20, count: 8193) + Array(#"{"state":"away"}"#.utf8)) == nil)
    }
}
