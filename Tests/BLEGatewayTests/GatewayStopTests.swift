import BLECore
import BLETestSupport
import BLEWire
import Foundation
import Testing

/// How long a SIGTERM'd `ble gateway` takes to exit when a step of its stop cannot finish.
@Suite struct GatewayStopTests {
    /// The controller stops answering while the gateway scans (its queue suspended): the stop
    /// still ends, exit 0 within 8 s of SIGTERM (docs/gateway.md), `offline` published first.
    @Test func aStopWithASilentControllerEndsWithinTheBound() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let vc = GatewayBed.controller(advertiser: 0xC3_DD_00_00_00_01, [0x02, 0x01, 0x06])
        let gateway = try Child(path: GatewayProcessTests.ble, ["-d", try vc.servePseudoTerminal(), "gateway", "--mqtt", broker.url, "--id", "gwstop"])
        #expect(try await watcher.next("ble/gwstop/status").text == "online")
        // The device's message: the scan runs.
        _ = try await watcher.next("ble/gwstop/devices/C3DD00000001")
        vc.queue.suspend()
        let stopping = ContinuousClock.now
        gateway.signal(SIGTERM)
        let status = await gateway.waitForExit(timeout: .seconds(20))
        let stopped = ContinuousClock.now - stopping
        vc.queue.resume()
        #expect(status == 0)
        // 8 s, and 2 s more for a loaded machine to run the exiting process.
        #expect(stopped < .seconds(10), "\(stopped)")
        _ = try await watcher.next("ble/gwstop/status") { $0.text == "offline" }
        await watcher.stop()
    }
}
