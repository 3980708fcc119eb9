import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing
import BLEWire

/// Two `ble gateway` processes of the fleet "house" (FleetBed) on a mosquitto that logs every
/// SUBSCRIBE and UNSUBSCRIBE: a gateway subscribes to a device's topics only once it hears the
/// device, gets the device's retained last packet before it publishes (so a packet the fleet
/// published already is not published again, even by the loudest gateway), and unsubscribes
/// once it no longer hears the device.
@Suite(.serialized) struct FleetFollowTests {
    /// `awaySeconds` 6: a device not heard for 8 s is left.
    static let config = #"{"fleet": {"name": "house", "slots": 1, "awaySeconds": 6}, "#
        + #""scan": {"passive": true, "publishIntervalSeconds": 3600, "lostAfterSeconds": 3600}}"#
    static let address = LEAddress(BluetoothAddress(rawValue: 0xC2_BB_00_00_00_01), type: .random)
    static let compact = "C2BB00000001"

    /// Flags; Manufacturer Specific Data of company 0xFFFF (reserved for tests): the round.
    static func device(round: Int, rssi: Int8) -> SimulatedPeripheral {
        SimulatedPeripheral(address: address, advertisingData: [0x02, 0x01, 0x06, 0x04, 0xFF, 0xFF, 0xFF, UInt8(round)],
                            isConnectable: false, rssi: rssi)
    }

    static func data(_ round: Int) -> String { String(format: #""FFFF":"%02X""#, round) }

    /// mosquitto's log line for a SUBSCRIBE (`CLIENT QOS TOPIC`) and an UNSUBSCRIBE (`CLIENT TOPIC`).
    static func subscribed(_ g: Int, _ topic: String) -> String { "ble-gateway-gw\(g) 0 \(topic)\n" }
    static func unsubscribed(_ g: Int, _ topic: String) -> String { "ble-gateway-gw\(g) \(topic)\n" }

    /// The 16 hex digits after `"packet":"` at the end of a payload.
    static func packet(_ text: String) -> Substring? {
        guard let r = text.range(of: #""packet":""#, options: .backwards), text.hasSuffix("\"}") else { return nil }
        let hex = text[r.upperBound...].dropLast(2)
        return hex.count == 16 && hex.allSatisfy(\.isHexDigit) ? hex : nil
    }

    @Test func aGatewayFollowsOnlyTheDevicesItHearsAndGetsTheirStateFirst() async throws {
        let broker = try await Broker.start(settings: "allow_anonymous true\nlog_type subscribe\nlog_type unsubscribe")
        let packets = "ble/house/packets/\(Self.compact)", presence = "ble/house/presence/\(Self.compact)/#"
        // gw0 hears the device from the start, gw1 does not.
        let bed = try await FleetBed.start(gateways: 2, config: Self.config, broker: broker) { g, _ in
            g == 0 ? [Self.device(round: 0, rssi: -60)] : []
        }
        let w = bed.watcher
        let first = try await w.next("ble/house/devices/\(Self.compact)") { $0.text.contains(Self.data(0)) }
        // The retained last packet: the device message's gateway and packet, alone.
        let last = try await w.next(packets)
        #expect(last.text.hasPrefix(#"{"gateway":"gw0","packet":""#) && Self.packet(last.text) != nil && Self.packet(last.text) == Self.packet(first.text),
                "\(last.text) / \(first.text)")
        let before = await broker.log(timeout: .seconds(30)) { $0.contains(Self.subscribed(0, presence)) }
        #expect(before.contains(Self.subscribed(0, packets)), "\(before)")
        // Nobody subscribes to every device any more.
        #expect(!before.contains("ble/house/devices/+") && !before.contains("ble/house/presence/+"), "\(before)")

        // gw1 hears the same packet, louder than gw0 (which hears it again, so it stays): gw1
        // subscribes, the broker sends it the retained packet before the echo of its own report,
        // and it drops its copy.
        bed.radios[0].addPeripheral(Self.device(round: 0, rssi: -60))
        bed.radios[1].addPeripheral(Self.device(round: 0, rssi: -40))
        let joined = await broker.log(timeout: .seconds(30)) { $0.contains(Self.subscribed(1, presence)) }
        #expect(joined.contains(Self.subscribed(1, packets)), "\(joined)")
        _ = try await w.next("ble/house/presence/\(Self.compact)/gw1")
        try await bed.syncAll("state")
        let copies = await w.on("ble/house/devices/\(Self.compact)").filter { $0.text.contains(Self.data(0)) }
        #expect(copies.count == 1, "\(copies.map(\.text))")

        // A new reading only gw1 hears: it is the loudest and publishes it at once, once.
        bed.radios[1].addPeripheral(Self.device(round: 1, rssi: -40))
        let fresh = try await w.next("ble/house/devices/\(Self.compact)") { $0.text.contains(Self.data(1)) }
        #expect(fresh.text.contains(#""gateway":"gw1","packet":""#), "\(fresh.text)")
        let next = try await w.next(packets) { $0.text.hasPrefix(#"{"gateway":"gw1""#) }
        #expect(Self.packet(next.text) == Self.packet(fresh.text))

        // Neither radio hears the device any more: 4/3 of awaySeconds later each gateway
        // unsubscribes from both of its topics; the last packet is cleared with the `away`.
        let left = await broker.log(timeout: .seconds(30)) {
            $0.contains(Self.unsubscribed(1, packets)) && $0.contains(Self.unsubscribed(1, presence))
                && $0.contains(Self.unsubscribed(0, packets)) && $0.contains(Self.unsubscribed(0, presence))
        }
        #expect(left.contains(Self.unsubscribed(1, packets)) && left.contains(Self.unsubscribed(0, packets)), "\(left)")
        _ = try await w.next("ble/house/presence/\(Self.compact)") { $0.text == #"{"state":"away"}"# }
        _ = try await w.next(packets) { $0.payload.isEmpty }
        try await bed.syncAll("left")
        #expect(await w.on("ble/house/devices/\(Self.compact)").count == 2)
        #expect(try await bed.stop() == [0, 0])
    }
}
