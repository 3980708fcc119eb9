import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import SMP

/// A `Gateway` on a `Central` over the in-process virtual controller (immediate time: each
/// simulated peripheral advertises once when the scan starts), publishing to `broker`.
///
///     let bed = try await GatewayBed(broker: broker, peripherals: [thermometer]) { $0.scan.lostAfter = .seconds(1) }
struct GatewayBed {
    static let id = "gw"
    let vc: VirtualController
    let central: Central
    let gateway: Gateway
    let task: Task<Void, any Error>

    init(broker: Broker, peripherals: [SimulatedPeripheral], bonds: (any BondStore)? = nil,
         _ configure: (inout GatewayConfig) -> Void = { _ in }) async throws {
        var options = VirtualController.Options()
        options.time = .immediate
        vc = VirtualController(options: options)
        for p in peripherals { vc.addPeripheral(p) }
        central = Central(transport: vc.makeTransport(), options: vc.centralOptions())
        try await central.powerOn()
        var config = GatewayConfig()
        config.broker.url = broker.url
        config.id = Self.id
        config.broker.reconnectDelay = .seconds(1)
        config.broker.reconnectMaximumDelay = .seconds(1)
        configure(&config)
        let gateway = try Gateway(central: central, config: config, bonds: bonds)
        self.gateway = gateway
        task = Task { try await gateway.run() }
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
