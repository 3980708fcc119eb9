import BLEGateway
import Foundation
import Testing

/// dist/ble-gateway.json, the sample config the Debian package installs, is a valid config:
/// a local broker, no devices (advertisements only); a file over the 1 MiB bound is refused
/// before it is parsed.
@Suite struct SampleConfigTests {
    @Test func theSampleConfigLoads() throws {
        let path = GatewayProcessTests.packageRoot.appendingPathComponent("dist/ble-gateway.json").path
        let config = try GatewayConfig.load(path: path)
        try config.validate()
        #expect(config.broker.url == "mqtt://localhost:1883")
        #expect(config.id == "gateway")
        #expect(config.devices.isEmpty)
        #expect(config.scan.publishInterval == .seconds(10) && config.scan.lostAfter == .seconds(30))
    }

    @Test func aConfigFileOverTheBoundIsRefused() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(repeating: 0x20, count: GatewayConfig.maximumFileSize + 1).write(to: file)
        #expect {
            try GatewayConfig.load(path: file.path)
        } throws: { error in
            "\(error)".contains("\(file.path) is larger than 1048576 bytes")
        }
        #expect {
            try GatewayConfig.load(path: "/nonexistent/gateway.json")
        } throws: { error in
            "\(error)".contains("cannot read /nonexistent/gateway.json: No such file or directory")
        }
    }
}
