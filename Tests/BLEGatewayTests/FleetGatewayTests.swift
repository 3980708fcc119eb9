import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing
import BLEWire

/// Three `ble gateway` processes of the fleet "house" (FleetBed), each radio hearing the same
/// devices at its own RSSI: one device topic per device, each new reading published once
/// whichever gateway heard it, one presence per device naming the nearest gateway.
@Suite(.serialized) struct FleetGatewayTests {
    static let config = #"{"fleet": {"name": "house", "slots": 2, "awaySeconds": 5}, "homeAssistantDiscovery": true, "#
        + #""scan": {"passive": true, "publishIntervalSeconds": 3600, "lostAfterSeconds": 3600}}"#

    static func address(_ i: Int) -> LEAddress { LEAddress(BluetoothAddress(rawValue: 0xC2_AA_00_00_00_00 | UInt64(i)), type: .random) }
    static func compact(_ i: Int) -> String { String(format: "C2AA0000%04X", i) }

    /// Device `i` nearest gateway `i` (-40 dB there, 20 dB less per gateway farther); device 3 at -55 everywhere.
    static func rssi(_ g: Int, _ i: Int) -> Int8 { i == 3 ? -55 : Int8(-40 - 20 * abs(g - i)) }

    /// Manufacturer Specific Data of company 0xFFFF (reserved for tests): device, round.
    static func device(_ i: Int, round: Int, rssi: Int8) -> SimulatedPeripheral {
        SimulatedPeripheral(address: address(i), advertisingData: [0x02, 0x01, 0x06, 0x05, 0xFF, 0xFF, 0xFF, UInt8(i), UInt8(round)],
                            isConnectable: false, rssi: rssi)
    }

    static func data(_ i: Int, _ round: Int) -> String { String(format: #""FFFF":"%02X%02X""#, i, round) }

    @Test func everyGatewayFeedsOneDeviceTopicAndANewReadingGoesOutOnce() async throws {
        let bed = try await FleetBed.start(gateways: 3, config: Self.config) { g in (0..<4).map { Self.device($0, round: 0, rssi: Self.rssi(g, $0)) } }
        let w = bed.watcher
        for i in 0..<4 { _ = try await w.next("ble/house/devices/\(Self.compact(i))") { $0.text.contains(Self.data(i, 0)) } }
        // Round 1 heard by gw0 first; once gw1 and gw2 have its messages, they hear it too and drop it.
        for i in 0..<4 { bed.radios[0].addPeripheral(Self.device(i, round: 1, rssi: Self.rssi(0, i))) }
        for i in 0..<4 { _ = try await w.next("ble/house/devices/\(Self.compact(i))") { $0.text.contains(Self.data(i, 1)) } }
        try await bed.syncAll("r1")
        for g in 1...2 {
            for i in 0..<4 { bed.radios[g].addPeripheral(Self.device(i, round: 1, rssi: Self.rssi(g, i))) }
            // A device only this radio hears: its message comes after the gateway handled round 1.
            bed.radios[g].addPeripheral(Self.device(10 + g, round: 0, rssi: -70))
        }
        for g in 1...2 { _ = try await w.next("ble/house/devices/\(Self.compact(10 + g))") }
        // Round 2 of device 0 only on the farthest radio.
        bed.radios[2].addPeripheral(Self.device(0, round: 2, rssi: Self.rssi(2, 0)))
        let far = try await w.next("ble/house/devices/\(Self.compact(0))") { $0.text.contains(Self.data(0, 2)) }
        #expect(far.text.contains(#""rssi":-80,"#) && far.text.contains(#""gateway":"gw2","packet":""#), "\(far.text)")
        #expect(try await bed.stop() == [0, 0, 0])

        let messages = await w.messages
        for i in 0..<4 {
            let texts = messages.filter { $0.topic == "ble/house/devices/\(Self.compact(i))" }.map(\.text)
            // Round 0 goes out while the gateways start, each before it knows the others: at most once each.
            #expect((1...3).contains(texts.filter { $0.contains(Self.data(i, 0)) }.count), "\(texts)")
            #expect(texts.filter { $0.contains(Self.data(i, 1)) }.count == 1, "\(texts)")
            #expect(texts.filter { $0.contains(Self.data(i, 1)) }.allSatisfy { $0.contains(#""gateway":"gw0""#) })
        }
        #expect(messages.filter { $0.text.contains(Self.data(0, 2)) }.count == 1)
        // No gateway's own device topics; Home Assistant: each device once, RSSI and presence.
        #expect(!messages.contains { $0.topic.hasPrefix("ble/gw") && $0.topic.contains("/devices/") })
        let discovery = Set(messages.map(\.topic).filter { $0.hasPrefix("homeassistant/") })
        let expected = [0, 1, 2, 3, 11, 12].flatMap { i in
            ["homeassistant/sensor/ble_\(Self.compact(i))/rssi/config", "homeassistant/sensor/ble_\(Self.compact(i))/presence/config"]
        }
        #expect(discovery == Set(expected), "\(discovery.sorted())")
    }

    /// The `nearest` of a presence message.
    static func nearest(_ text: String) -> String? {
        guard let r = text.range(of: #""nearest":""#) else { return nil }
        return String(text[r.upperBound...].prefix { $0 != "\"" })
    }

    @Test func presenceNamesTheNearestGatewayHoldsAtEqualRSSIAndGoesAway() async throws {
        let bed = try await FleetBed.start(gateways: 3, config: Self.config) { g in (0..<4).map { Self.device($0, round: 0, rssi: Self.rssi(g, $0)) } }
        let w = bed.watcher
        func presence(_ i: Int) -> String { "ble/house/presence/\(Self.compact(i))" }
        for i in 0..<3 {
            let m = try await w.next(presence(i)) { Self.nearest($0.text) == "gw\(i)" }
            #expect(m.text.contains(#""gw\#(i)":-40"#), "\(m.text)")
        }
        _ = try await w.next(presence(3)) { $0.text.hasPrefix(#"{"state":"present""#) }
        try await bed.syncAll("settled")
        let held = Self.nearest(await w.on(presence(3)).last?.text ?? "")
        #expect(held != nil)
        await w.clear()
        // Device 3 between gw0 and gw1: each hears it 5 dB above and below -55 in turn.
        var silent = ContinuousClock.now
        for round in 1...6 {
            let swing: Int8 = round % 2 == 0 ? 5 : -5
            silent = ContinuousClock.now
            bed.radios[0].addPeripheral(Self.device(3, round: 0, rssi: -55 + swing))
            bed.radios[1].addPeripheral(Self.device(3, round: 0, rssi: -55 - swing))
            for g in 0..<3 { bed.radios[g].advertiseNow() }
        }
        try await bed.syncAll("swung")
        let after = await w.on(presence(3)).map(\.text)
        // The swing reached the fleet: both gateways reported new smoothed values.
        let (reports0, reports1) = (await w.on(presence(3) + "/gw0").count, await w.on(presence(3) + "/gw1").count)
        #expect(reports0 >= 2 && reports1 >= 2, "\(reports0) and \(reports1) reports")
        #expect(after.allSatisfy { Self.nearest($0) == held }, "\(String(describing: held)) then \(after)")
        // Silence: away after awaySeconds (5 s) at least, and no later than 4/3 of it (plus the broker's time).
        _ = try await w.next(presence(0), timeout: .seconds(15)) { $0.text == #"{"state":"away"}"# }
        let quiet = ContinuousClock.now - silent
        #expect(quiet >= .seconds(5) && quiet < .seconds(10), "\(quiet)")
        #expect(try await bed.stop() == [0, 0, 0])
    }

    /// Home Assistant's rule for `availability_mode: any`: available while the last message on
    /// any of the config's availability topics is `online` (its default payload).
    static func available(_ config: MQTTMessage, _ messages: [MQTTMessage]) throws -> Bool {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(config.payload)) as? [String: Any])
        let topics = try #require(object["availability"] as? [[String: String]]).compactMap { $0["topic"] }
        #expect(object["availability_mode"] as? String == "any")
        return topics.contains { t in messages.last { $0.topic == t }?.text == "online" }
    }

    @Test func fleetEntitiesStayAvailableWhileAnyGatewayIsOnline() async throws {
        let bed = try await FleetBed.start(gateways: 3, config: Self.config) { _ in [] }
        let w = bed.watcher
        try await bed.syncAll("up")
        for g in 0..<3 { bed.radios[g].addPeripheral(Self.device(0, round: 0, rssi: Self.rssi(g, 0))) }
        let rssiConfig = "homeassistant/sensor/ble_\(Self.compact(0))/rssi/config"
        let presenceConfig = "homeassistant/sensor/ble_\(Self.compact(0))/presence/config"
        let three = #""availability":[{"topic":"ble/gw0/status"},{"topic":"ble/gw1/status"},{"topic":"ble/gw2/status"}],"availability_mode":"any""#
        for topic in [rssiConfig, presenceConfig] { _ = try await w.next(topic) { $0.text.contains(three) } }
        try await bed.syncAll("announced")
        // Every gateway named the same three, sorted: the retained config never changed hands.
        for topic in [rssiConfig, presenceConfig] {
            let texts = await w.on(topic).map(\.text)
            #expect(texts.allSatisfy { $0.contains(three) }, "\(texts)")
        }
        let announcedBefore = await w.on(rssiConfig).count

        // A fourth gateway joins (its retained slots): the next reading re-announces with four.
        try w.client.publish(MQTTMessage(topic: "ble/house/gateways/gw9/slots", text: "3", qos: .atLeastOnce, retain: true))
        try await bed.syncAll("joined")
        for g in 0..<3 { bed.radios[g].addPeripheral(Self.device(0, round: 1, rssi: Self.rssi(g, 0))) }
        let four = #""availability":[{"topic":"ble/gw0/status"},{"topic":"ble/gw1/status"},{"topic":"ble/gw2/status"},{"topic":"ble/gw9/status"}]"#
        let config = try await w.next(rssiConfig) { $0.text.contains(four) }
        try await bed.syncAll("reannounced")
        let announcedAfter = await w.on(rssiConfig).count
        #expect(announcedAfter > announcedBefore && announcedAfter <= announcedBefore + 3, "\(announcedBefore) then \(announcedAfter)")

        // gw0 killed (its will says offline), then gw1 stopped: gw2 keeps the sensor available;
        // status flaps announce nothing.
        bed.children[0].signal(SIGKILL)
        bed.radios[0].closeTransport()
        _ = try await w.next("ble/gw0/status") { $0.text == "offline" }
        #expect(try Self.available(config, await w.messages))
        bed.children[1].signal(SIGTERM)
        #expect(await bed.children[1].waitForExit(timeout: .seconds(10)) == 0)
        _ = try await w.next("ble/gw1/status") { $0.text == "offline" }
        #expect(try Self.available(config, await w.messages))
        try await bed.syncAll("flapped", gateways: [2])
        #expect(await w.on(rssiConfig).count == announcedAfter)
        // The last one gone: unavailable.
        #expect(try await bed.stop(gateways: [2]) == [0])
        #expect(try !Self.available(config, await w.messages))
    }
}
