import BLECore
@testable import BLEGateway
import Testing
import BLEWire

/// The parts the fleet's hold-back and its Home Assistant availability are made of, with
/// made-up times: the round-trip estimate with RFC 6298's gains (section 2.2: first sample R gives
/// SRTT = R, RTTVAR = R/2; then RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R'| and SRTT = 7/8 SRTT + 1/8 R'),
/// the hold queue's order, and the member set.
@Suite struct FleetHoldoffTests {
    let t0 = ContinuousClock.now
    let topics = FleetTopics(prefix: "ble", fleet: "house", gatewayID: "gw1")

    @Test func theHoldoffFollowsTheRoundTripAsRFC6298Smooths() {
        var rtt = FleetRoundTrip()
        #expect(rtt.holdoff == .milliseconds(100))
        // R = 40 ms: SRTT 40, RTTVAR 20; 100 + 40 + 4 * 20 = 220 ms.
        rtt.sample(.milliseconds(40))
        #expect(rtt.smoothed == .milliseconds(40) && rtt.variation == .milliseconds(20))
        #expect(rtt.holdoff == .milliseconds(220))
        // R' = 80 ms: RTTVAR 3/4 * 20 + 1/4 * 40 = 25, SRTT 7/8 * 40 + 1/8 * 80 = 45; 100 + 45 + 100 = 245 ms.
        rtt.sample(.milliseconds(80))
        #expect(rtt.smoothed == .milliseconds(45) && rtt.variation == .milliseconds(25))
        #expect(rtt.holdoff == .milliseconds(245))
        // A broker that stalled: at most 5 s, and a sample counts as 10 s at most.
        rtt.sample(.seconds(3600))
        #expect(rtt.smoothed == Duration.milliseconds(45) * 7 / 8 + Duration.seconds(10) / 8)
        #expect(rtt.holdoff == .seconds(5))
        #expect(rtt.samples == 3)
    }

    @Test func theHoldQueueNeverLetsALaterEntryFallDueFirst() {
        let a = BluetoothAddress(rawValue: 0xC0_11_22_33_44_01)
        var q = FleetHoldQueue()
        #expect(q.isEmpty && q.nextDue == nil)
        #expect(q.append(FleetPacketKey(address: a, packet: 1), due: t0 + .milliseconds(300)) == t0 + .milliseconds(300))
        // The hold-back got shorter: the second waits for the first.
        #expect(q.append(FleetPacketKey(address: a, packet: 2), due: t0 + .milliseconds(200)) == t0 + .milliseconds(300))
        #expect(q.append(FleetPacketKey(address: a, packet: 3), due: t0 + .milliseconds(400)) == t0 + .milliseconds(400))
        #expect(q.popDue(t0 + .milliseconds(299)) == nil)
        #expect(q.popDue(t0 + .milliseconds(300))?.key.packet == 1)
        #expect(q.popDue(t0 + .milliseconds(300))?.key.packet == 2)
        #expect(q.nextDue == t0 + .milliseconds(400))
        #expect(q.popDue(t0 + .seconds(1))?.key.packet == 3)
        #expect(q.isEmpty)
    }

    @Test func theMemberListIsSortedAndChangesOnlyWhenAGatewayJoins() {
        var m = FleetMembers(own: topics)
        #expect(m.shown.topics == ["ble/gw1/status"] && m.shown.generation == 0)
        m.update(others: ["gw2", "gw0"])
        #expect(m.shown.topics == ["ble/gw0/status", "ble/gw1/status", "ble/gw2/status"] && m.shown.generation == 1)
        // The same gateways again (a status flap, a claim): the same generation.
        m.update(others: ["gw0", "gw2"])
        #expect(m.shown.generation == 1)
        m.update(others: ["gw0", "gw2", "attic"])
        #expect(m.shown.topics == ["ble/attic/status", "ble/gw0/status", "ble/gw1/status", "ble/gw2/status"] && m.shown.generation == 2)
        // At most 64, the first in order.
        m.update(others: (1000..<1100).map { "g\($0)" })
        #expect(m.shown.topics.count == 64)
        #expect(m.shown.topics.first == "ble/g1000/status" && m.shown.topics.last == "ble/g1063/status")
    }

    @Test func thePresenceConfigNamesEveryGatewayWithModeAny() {
        let a = BluetoothAddress(rawValue: 0xC0_11_22_33_44_01)
        let one = HomeAssistantDiscovery.presenceConfig(a, topics: topics, availability: ["ble/gw1/status"])
        #expect(one.text.hasSuffix(#"},"availability":[{"topic":"ble/gw1/status"}]}"#), "\(one.text)")
        let all = HomeAssistantDiscovery.presenceConfig(a, topics: topics, availability: ["ble/gw0/status", "ble/gw1/status"])
        #expect(all.text.hasSuffix(#"},"availability":[{"topic":"ble/gw0/status"},{"topic":"ble/gw1/status"}],"availability_mode":"any"}"#), "\(all.text)")
        #expect(!HomeAssistantDiscovery.presenceConfig(a, topics: topics).text.contains("availability"))
    }
}
