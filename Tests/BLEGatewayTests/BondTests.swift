import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import SMP
import Testing
import BLEWire

/// Devices whose config asks for a security level: the link is encrypted with the bond from
/// the bond store before anything else, or paired and bonded when there is none.
@Suite(.serialized) struct BondTests {
    /// The virtual controller's peer keeps no keys: the stored LTK goes out in LE Enable
    /// Encryption (Vol 4, Part E, 7.8.24: handle, Random_Number, EDIV, LTK least significant
    /// octet first) and the peer answers PIN or Key Missing (0x06); the link's topic says so.
    @Test func theStoredBondEncryptsAndAForgottenBondIsPublished() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let address = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_90), type: .random)
        let peer = SimulatedPeripheral(address: address, advertisingData: [0x02, 0x01, 0x06])
        let ltk = LongTermKey(key: 0x0F0E_0D0C_0B0A_0908_0706_0504_0302_0100, ediv: 0x1234, rand: 0x0102_0304_0506_0708,
                              keySize: 16, authenticated: false, secureConnections: false)
        let bonds = MemoryBondStore([Bond(peer: address, longTermKey: ltk)])
        let bed = try await GatewayBed(broker: broker, peripherals: [peer], bonds: bonds) {
            $0.scan.enabled = false
            var device = GatewayConfig.Device(address: address)
            device.security = .encrypted
            device.reconnect.maxAttempts = 0
            $0.devices = [device]
        }
        let enable = try await bed.vc.waitForCommand(HCIOpcode(rawValue: 0x2019))
        #expect(Array(enable.parameters.dropFirst(2)) == [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x34, 0x12] + (0...15).map { UInt8($0) })
        let link = try await watcher.next("ble/gw/devices/C01122334490/link")
        #expect(link.text.hasPrefix(#"{"state":"error","message":"security: C0:11:22:33:44:90 no longer has the bond"#), "\(link.text)")
        await bed.stop()
        await watcher.stop()
    }

    /// A bonded peer that starts encryption itself is answered from the gateway's bond store.
    /// The controller asks only when the peer is the central (Vol 4, Part E, 7.7.65.5); here the
    /// event is injected on the gateway's link to check that the store is wired in. Bytes from
    /// the spec: the LE Long Term Key Request event (0x3E, subevent 0x05, Connection_Handle,
    /// Random_Number, Encrypted_Diversifier, little endian); EDIV 0 and Rand 0 ask for the
    /// Secure Connections key, answered by LE Long Term Key Request Reply (7.8.25, 0x201A:
    /// handle, LTK least significant octet first).
    @Test func longTermKeyRequestsAreAnsweredFromTheBondStore() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let address = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_91), type: .random)
        let peer = SimulatedPeripheral(address: address, advertisingData: [0x02, 0x01, 0x06])
        let ltk = LongTermKey(key: 0x0F0E_0D0C_0B0A_0908_0706_0504_0302_0100, ediv: 0, rand: 0,
                              keySize: 16, authenticated: true, secureConnections: true)
        let bed = try await GatewayBed(broker: broker, peripherals: [peer], bonds: MemoryBondStore([Bond(peer: address, longTermKey: ltk)])) {
            $0.scan.enabled = false
            $0.devices = [GatewayConfig.Device(address: address)]
        }
        _ = try await watcher.next("ble/gw/devices/C01122334491/link") { $0.text == #"{"state":"connected"}"# }
        let handle = try #require(bed.vc.handle(of: address))
        let h = [UInt8(handle & 0xFF), UInt8(handle >> 8)]
        bed.vc.inject(.event(HCIEventPacket(code: 0x3E, parameters: [0x05] + h + [0, 0, 0, 0, 0, 0, 0, 0] + [0, 0])))
        let reply = try await bed.vc.waitForCommand(HCIOpcode(rawValue: 0x201A))
        #expect(reply.parameters == h + (0...15).map { UInt8($0) })
        await bed.stop()
        await watcher.stop()
    }

    /// `ble gateway` against Bumble's Security Manager (scenario "security", device "jw":
    /// Just Works, Secure Connections, bonding) with a bond directory: the first run pairs and
    /// keeps the bond, then reads the characteristic that needs encryption (5EC00002); the
    /// second run encrypts with the stored bond (the file is not rewritten) and reads it again.
    @Test(.timeLimit(.minutes(2)))
    func bondsComeFromAndGoToTheBondDirectory() async throws {
        try await VirtualRadio.with(scenario: "security") { radio in
            let broker = try await Broker.start()
            defer { broker.stop() }
            let watcher = try await Watcher.start(broker, "ble/#")
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("gwbonds-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let config = dir.appendingPathComponent("gateway.json")
            try #"""
            {"id": "gwb", "scan": {"enabled": false},
             "devices": [{"address": "F0:5E:C0:00:00:01", "security": "encrypted",
                          "read": [{"service": "5EC00001-0000-1000-8000-00805F9B34FB",
                                    "characteristic": "5EC00002-0000-1000-8000-00805F9B34FB", "intervalSeconds": 600}]}]}
            """#.write(to: config, atomically: true, encoding: .utf8)
            let bondDir = dir.appendingPathComponent("bonds")
            // UUIDs on the Bluetooth Base UUID are written short in topics.
            let topic = "ble/gwb/devices/F05EC0000001/5EC00001/5EC00002"
            var bondFile: Data?
            for run in 1...2 {
                let gateway = try Child(path: GatewayProcessTests.ble, ["-d", radio.transportSpec, "--bond-dir", bondDir.path, "gateway",
                                                                        "--mqtt", broker.url, "--config", config.path])
                // "encrypted" in UTF-8: the peer answers this read only on an encrypted link.
                let value = try await watcher.next(topic, timeout: .seconds(30))
                #expect(value.text == #"{"value":"656E63727970746564"}"#)
                let files = FileManager.default.enumerator(atPath: bondDir.path)?.compactMap { $0 as? String }
                    .filter { $0.hasSuffix("F0:5E:C0:00:00:01-random") } ?? []
                #expect(files.count == 1, "\(files)")
                let bytes = try files.first.map { try Data(contentsOf: bondDir.appendingPathComponent($0)) }
                if run == 1 { bondFile = bytes } else { #expect(bytes == bondFile, "the second run paired again instead of using the bond") }
                gateway.signal(SIGTERM)
                #expect(await gateway.waitForExit(timeout: .seconds(10)) == 0)
                _ = try await watcher.next("ble/gwb/status") { $0.text == "offline" }
                await watcher.clear()
            }
            await watcher.stop()
        }
    }
}
