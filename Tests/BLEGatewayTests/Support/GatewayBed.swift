import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import SMP
import Synchronization
import BLETransport
import BLEWire

/// A `Gateway` on a `Central` over the in-process virtual controller, publishing to `broker`.
/// In immediate time (the default) each simulated peripheral advertises once when the scan
/// starts; `controller` can ask for manual time instead (then the test advances the clock).
///
///     let bed = try await GatewayBed(broker: broker, peripherals: [thermometer]) { $0.scan.lostAfter = .seconds(1) }
struct GatewayBed {
    static let id = "gw"
    let vc: VirtualController
    let central: Central
    let gateway: Gateway
    let task: Task<Void, any Error>

    init(broker: Broker, peripherals: [SimulatedPeripheral], bonds: (any BondStore)? = nil,
         controller: VirtualController.Options = Self.immediate, logger: BLELogger = .silent, stateDirectory: String? = nil,
         _ configure: (inout GatewayConfig) -> Void = { _ in }) async throws {
        vc = VirtualController(options: controller)
        for p in peripherals { vc.addPeripheral(p) }
        var centralOptions = Central.Options()
        centralOptions.logger = logger
        central = Central(transport: vc.makeTransport(), options: vc.centralOptions(centralOptions))
        try await central.powerOn()
        var config = GatewayConfig()
        config.broker.url = broker.url
        config.id = Self.id
        config.broker.reconnectDelay = .seconds(1)
        config.broker.reconnectMaximumDelay = .seconds(1)
        configure(&config)
        let gateway = try Gateway(central: central, config: config, bonds: bonds, stateDirectory: stateDirectory)
        self.gateway = gateway
        task = Task { try await gateway.run() }
    }

    /// The virtual controller's defaults in immediate time.
    static var immediate: VirtualController.Options {
        var options = VirtualController.Options()
        options.time = .immediate
        return options
    }

    /// A virtual controller in immediate time with one advertiser at the random address `raw`,
    /// for a test that runs `ble gateway` as a process on it (`vc.servePseudoTerminal()`).
    static func controller(advertiser raw: UInt64, _ advertisingData: [UInt8]) -> VirtualController {
        let vc = VirtualController(options: immediate)
        let address = LEAddress(BluetoothAddress(rawValue: raw), type: .random)
        vc.addPeripheral(SimulatedPeripheral(address: address, advertisingData: advertisingData))
        return vc
    }

    /// Cancels the gateway (it publishes `offline` and leaves the broker) and closes the central.
    func stop() async {
        task.cancel()
        _ = try? await task.value
        await central.close()
    }
}

extension GatewayTopics {
    static let bed = GatewayTopics(gatewayID: GatewayBed.id)
}

/// Keeps the log lines a test's gateway writes.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])

    /// A logger that keeps warnings and above here.
    var logger: BLELogger {
        BLELogger(label: "test", minimumLevel: .warning) { [self] record in lines.withLock { $0.append(record.message) } }
    }

    var all: [String] { lines.withLock { $0 } }
}
