import BLECore
import BLEGateway
import Foundation
import Testing
import BLEWire

/// The `fleet` object of the config file: its values, its topics, and one mistake at a time.
@Suite struct FleetConfigTests {
    @Test func aFleetIsReadWithItsDefaultsAndTopics() throws {
        var c = try GatewayConfig.decode(Data(#"{"fleet": {"name": "house", "awaySeconds": 2.5}}"#.utf8))
        c.id = "gw1"
        #expect(c.fleet == GatewayConfig.Fleet(name: "house", slots: 3, away: .milliseconds(2500)))
        let t = try #require(c.fleetTopics)
        let a = BluetoothAddress(rawValue: 0xC0_11_22_33_44_55)
        #expect(t.device(a) == "ble/house/devices/C01122334455")
        #expect(t.presence(a) == "ble/house/presence/C01122334455")
        #expect(t.presence(a, gateway: "gw1") == "ble/house/presence/C01122334455/gw1")
        #expect(t.slots == "ble/house/gateways/gw1/slots")
        #expect(try GatewayConfig.decode(Data("{}".utf8)).fleetTopics == nil)
        #expect(t.claim(a) == "ble/house/claims/C01122334455")
        #expect(t.commands == "ble/house/commands" && t.response("7") == "ble/house/responses/7")
        #expect(t.subscriptions.contains("ble/house/claims/+") && t.subscriptions.contains("ble/+/status"))
    }

    @Test func heldDeviceTimingsAreRead() throws {
        let c = try GatewayConfig.decode(Data(#"{"fleet": {"name": "house", "claimDelaySeconds": 0.5, "graceSeconds": 0}}"#.utf8))
        #expect(c.fleet?.claimDelay == .milliseconds(500) && c.fleet?.grace == .zero)
        let d = try GatewayConfig.decode(Data(#"{"fleet": {"name": "house"}}"#.utf8))
        #expect(d.fleet?.claimDelay == .seconds(1) && d.fleet?.grace == .seconds(60))
    }

    @Test(arguments: [
        (#"{"fleet": {"slots": 2}}"#, "fleet.name"),
        (#"{"fleet": {"name": "a/b"}}"#, "fleet.name"),
        (#"{"fleet": {"name": "gw"}}"#, "fleet.name"),
        (#"{"fleet": {"name": "house", "slots": -1}}"#, "fleet.slots"),
        (#"{"fleet": {"name": "house", "awaySeconds": 0}}"#, "fleet.awaySeconds"),
        (#"{"fleet": {"name": "house", "away": 5}}"#, "fleet.away"),
        (#"{"fleet": {"name": "house", "claimDelaySeconds": 0.01}}"#, "fleet.claimDelaySeconds"),
        (#"{"fleet": {"name": "house", "graceSeconds": -1}}"#, "fleet.graceSeconds"),
    ])
    func aMistakeNamesItsKey(json: String, key: String) {
        #expect(ConfigTests.mistake(json)?.key == key, "\(json): \(String(describing: ConfigTests.mistake(json)))")
    }
}
