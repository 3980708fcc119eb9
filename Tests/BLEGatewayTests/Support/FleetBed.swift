import BLECore
import BLEGateway
import BLETestSupport
import Foundation

/// Several `ble gateway` processes of one fleet ("house"), each on its own virtual controller
/// (immediate time) served on a pseudo-terminal, all on one mosquitto; `watcher` sees `#`.
struct FleetBed {
    let broker: Broker
    let watcher: Watcher
    let radios: [VirtualController]
    let children: [Child]
    let directory: URL

    /// `peripherals(g)`: what radio `g` hears at the start. The config file is the same for all.
    static func start(gateways: Int, config: String, peripherals: (Int) -> [SimulatedPeripheral]) async throws -> FleetBed {
        try await start(gateways: gateways, config: config) { g, _ in peripherals(g) }
    }

    /// `peripherals(g, radio)`: what radio `g` hears at the start (GATT servers run on its queue).
    /// `relay`: gateway `g` reaches the broker through `relay(broker)` instead (a partition).
    static func start(gateways: Int, config: String, broker: Broker? = nil, relayed: [Int: String] = [:],
                      peripherals: (Int, VirtualController) -> [SimulatedPeripheral]) async throws -> FleetBed {
        let broker = try await { () async throws -> Broker in if let broker { return broker }; return try await Broker.start() }()
        let watcher = try await Watcher.start(broker, "#")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("fleet.json")
        try config.write(to: file, atomically: true, encoding: .utf8)
        var options = VirtualController.Options()
        options.time = .immediate
        var radios: [VirtualController] = []
        var children: [Child] = []
        for g in 0..<gateways {
            let vc = VirtualController(options: options)
            for p in peripherals(g, vc) { vc.addPeripheral(p) }
            let spec = try vc.servePseudoTerminal()
            radios.append(vc)
            children.append(try Child(path: GatewayProcessTests.ble, ["-d", spec, "gateway", "--mqtt", relayed[g] ?? broker.url, "--id", "gw\(g)", "--config", file.path]))
        }
        for g in 0..<gateways { _ = try await watcher.next("ble/house/gateways/gw\(g)/slots") }
        return FleetBed(broker: broker, watcher: watcher, radios: radios, children: children, directory: directory)
    }

    /// Returns once gateway `g` handled every message the broker sent it before: a command it
    /// refuses at once comes after them on its connection, and its answer after what they caused.
    func sync(_ g: Int, _ tag: String) async throws {
        try watcher.client.publish(MQTTMessage(topic: "ble/gw\(g)/commands", text: #"{"id":"\#(tag)","command":"sync"}"#, qos: .atLeastOnce))
        _ = try await watcher.next("ble/gw\(g)/responses/\(tag)")
    }

    /// Every gateway, twice (what the first round of messages caused is handled by the second).
    func syncAll(_ tag: String, gateways: [Int]? = nil) async throws {
        for pass in 0..<2 {
            for g in gateways ?? Array(children.indices) { try await sync(g, "\(tag)-\(pass)-\(g)") }
        }
    }

    /// SIGTERM to every gateway; each exits 0 and its `offline` comes after all it published.
    func stop(gateways: [Int]? = nil) async throws -> [Int32] {
        let running = gateways ?? Array(children.indices)
        for g in running { children[g].signal(SIGTERM) }
        var codes: [Int32] = []
        for g in running {
            codes.append(await children[g].waitForExit(timeout: .seconds(10)))
            _ = try await watcher.next("ble/gw\(g)/status") { $0.text == "offline" }
        }
        await watcher.stop()
        broker.stop()
        try? FileManager.default.removeItem(at: directory)
        return codes
    }
}
