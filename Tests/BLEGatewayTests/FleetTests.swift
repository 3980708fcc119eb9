import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing
import BLEWire

/// A small fleet (`make bench` runs 8 x 200): two `ble gateway` processes, each on its own
/// virtual controller served on a pseudo-terminal with 20 devices, publishing to one
/// mosquitto. Each round every device advertises new manufacturer data (company 0xFFFF,
/// reserved for tests), so each device topic gets exactly one message per round: counted
/// per topic after both gateways stopped, nothing is missing and nothing is extra.
@Suite(.serialized) struct FleetTests {
    static let gateways = 2
    static let devices = 20
    static let rounds = 3

    static func address(_ g: Int, _ i: Int) -> LEAddress {
        LEAddress(BluetoothAddress(rawValue: 0xC2_00_00_00_00_00 | UInt64(g) << 16 | UInt64(i)), type: .random)
    }

    /// Flags; Manufacturer Specific Data of company 0xFFFF: gateway, device (2 octets), round.
    static func device(_ g: Int, _ i: Int, round r: Int) -> SimulatedPeripheral {
        SimulatedPeripheral(address: address(g, i), advertisingData: [0x02, 0x01, 0x06, 0x07, 0xFF, 0xFF, 0xFF,
                                                                      UInt8(g), UInt8(i & 0xFF), UInt8(i >> 8), UInt8(r)],
                            isConnectable: false)
    }

    static func topic(_ g: Int, _ i: Int) -> String {
        "ble/fleet\(g)/devices/" + address(g, i).address.description.replacingOccurrences(of: ":", with: "")
    }

    /// The manufacturer data as the payload shows it.
    static func data(_ g: Int, _ i: Int, _ r: Int) -> String {
        #""FFFF":""# + String(format: "%02X%02X%02X%02X", g, i & 0xFF, i >> 8, r) + #"""#
    }

    @Test func everyDeviceTopicGetsEveryRoundOnce() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        var options = VirtualController.Options()
        options.time = .immediate
        var radios: [VirtualController] = []
        var children: [Child] = []
        for g in 0..<Self.gateways {
            let vc = VirtualController(options: options)
            for i in 0..<Self.devices { vc.addPeripheral(Self.device(g, i, round: 0)) }
            let spec = try vc.servePseudoTerminal()
            radios.append(vc)
            children.append(try Child(path: GatewayProcessTests.ble, ["-d", spec, "gateway", "--mqtt", broker.url, "--id", "fleet\(g)",
                                                                      "--passive", "--publish-interval", "3600", "--lost-after", "3600"]))
        }
        // Round 0 is what each radio advertises when its gateway's scan starts; each next
        // round goes out once the previous one arrived everywhere.
        for round in 0...Self.rounds {
            if round > 0 {
                for (g, vc) in radios.enumerated() {
                    for i in 0..<Self.devices { vc.addPeripheral(Self.device(g, i, round: round)) }
                }
            }
            for g in 0..<Self.gateways {
                for i in 0..<Self.devices {
                    let expected = Self.data(g, i, round)
                    _ = try await watcher.next(Self.topic(g, i), timeout: .seconds(30)) { $0.text.contains(expected) }
                }
            }
        }
        for child in children { child.signal(SIGTERM) }
        for (g, child) in children.enumerated() {
            #expect(await child.waitForExit(timeout: .seconds(10)) == 0)
            // `offline` comes after everything the gateway published before it.
            _ = try await watcher.next("ble/fleet\(g)/status") { $0.text == "offline" }
        }
        for g in 0..<Self.gateways {
            for i in 0..<Self.devices {
                let texts = await watcher.on(Self.topic(g, i)).map(\.text)
                #expect(texts.count == Self.rounds + 1, "\(Self.topic(g, i)): \(texts)")
                #expect(texts.enumerated().allSatisfy { $0.element.contains(Self.data(g, i, $0.offset)) }, "\(texts)")
            }
        }
        await watcher.stop()
    }
}
