import BLECore
import BLEGateway
import BLETestSupport
import Glibc
import Testing
import BLEWire

/// Configured links through the background connections (the Filter Accept List) and the GATT
/// cache under the gateway's state directory: a reconnect, and a restarted gateway, find the
/// device's database by its Database Hash and discover nothing.
@Suite(.serialized) struct CachedReconnectTests {
    /// ATT Read By Group Type Request (Vol 3, Part F, 3.4.4.9): primary service discovery.
    static let readByGroupType: UInt8 = 0x10
    /// ATT Write Request (3.4.5.1) of 0x0001 to Battery Level's CCCD, 0x0017 in this database.
    static let enableBatteryLevel: [UInt8] = [0x12, 0x17, 0x00, 0x01, 0x00]

    static func directory() throws -> String {
        var template = Array("/tmp/ble-gateway-state-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(cString: try #require(made))
    }

    static func attRequests(_ vc: VirtualController) -> [[UInt8]] {
        vc.l2capReceived.filter { $0.channelID == 0x0004 }.map(\.payload)
    }

    @Test func aCachedReconnectAndARestartSkipDiscovery() async throws {
        let state = try Self.directory()
        defer { _ = system("rm -rf '\(state)'") }
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")

        let first = try await GatewayBed(broker: broker, peripherals: [], stateDirectory: state) { c in
            LinkAndCommandTests.holdTheSensor(&c) { $0.reconnect.initialDelay = .milliseconds(50) }
        }
        // The configured device waits on the Filter Accept List: LE Create Connection (Vol 4,
        // Part E, 7.8.12) with Initiator_Filter_Policy 0x01.
        let create = try await first.vc.waitForCommand(HCIOpcode(rawValue: 0x200D))
        #expect(create.parameters[4] == 0x01)
        #expect(first.vc.filterAcceptList == [LinkAndCommandTests.peer])
        let (sensor, _) = LinkAndCommandTests.sensor(first.vc)
        first.vc.addPeripheral(sensor)
        _ = try await watcher.next("ble/gw/devices/C01122334477/link") { $0.text == #"{"state":"connected"}"# }
        #expect(Self.attRequests(first.vc).filter { $0.first == Self.readByGroupType }.count >= 1)
        let discovered = Self.attRequests(first.vc).filter { $0.first == Self.readByGroupType }.count

        // The device drops the link (Connection Timeout, 0x08): the background connection
        // brings it back and the CCCD is written again, with no discovery.
        try first.vc.disconnect(LinkAndCommandTests.peer, reason: HCIStatus(rawValue: 0x08))
        try await first.vc.waitUntil("CCCD written on the second link", timeout: .seconds(10)) { vc in
            Self.attRequests(vc).filter { $0 == Self.enableBatteryLevel }.count >= 2
        }
        #expect(Self.attRequests(first.vc).filter { $0.first == Self.readByGroupType }.count == discovered)
        await first.stop()
        #expect(FileManagerFree.names(in: state + "/gatt-cache") == ["C0:11:22:33:44:77-random"])

        // A restarted gateway on the same state directory.
        let second = try await GatewayBed(broker: broker, peripherals: [], stateDirectory: state) { c in
            LinkAndCommandTests.holdTheSensor(&c)
        }
        let (again, server) = LinkAndCommandTests.sensor(second.vc)
        second.vc.addPeripheral(again)
        try await second.vc.waitUntil("CCCD written after the restart", timeout: .seconds(10)) { vc in
            Self.attRequests(vc).contains(Self.enableBatteryLevel)
        }
        #expect(!Self.attRequests(second.vc).contains { $0.first == Self.readByGroupType })
        #expect(await server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x37]) == 1)
        _ = try await watcher.next(LinkAndCommandTests.batteryLevel) { $0.text == #"{"value":"37"}"# }
        await second.stop()
        await watcher.stop()
    }
}

/// Directory listings without Foundation.
enum FileManagerFree {
    static func names(in path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." && !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }
}
