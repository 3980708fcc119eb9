import Testing
import Foundation
import Synchronization
import BLETestSupport
import BLEWire
import BLECore
import GATTClient

/// The Bumble radio process killed (SIGKILL) in the middle of a session, over H4/TCP: the
/// central reports the transport lost, notification streams end with a typed error, a link
/// with `ReconnectPolicy.always` does not spin trying to reconnect, and no descriptor is
/// left open.
@Suite(.serialized, .enabled(if: Soak.radioAvailable))
struct FaultRadioTests {
    @Test(.timeLimit(.minutes(1)))
    func killedRadioIsTransportLostAndNothingSpins() async throws {
        // A first radio brings up what Foundation's Process keeps for the life of the
        // process (its run-loop thread and descriptors); the baseline is taken after it.
        try await VirtualRadio.with(scenario: "lab") { _ in }
        // Sockets are compared: each VirtualRadio leaves its stdout/stderr pipe read ends and
        // Foundation's process-monitoring descriptors open after it exits (a test-support
        // limitation, not the stack's).
        let before = ProcessResources.openSockets()
        try await Self.killMidSession()
        #expect(ProcessResources.openSockets() == before, "open: \(ProcessResources.openFDTargets())")
    }

    /// The session itself; the radio and everything of the stack are released on return.
    static func killMidSession() async throws {
        let radio = try await VirtualRadio.start(scenario: "lab")
        let device = try #require(radio.device("lab"))
        let peer = try #require(LEAddress(device.address, type: .random))
        let central = try await Central.open(radio.transportSpec)
        var states = await central.stateEvents().makeAsyncIterator()
        #expect(await states.next() == .poweredOn)

        let policy = ReconnectPolicy.always(backoff: .exponential(initial: .milliseconds(50), jitter: 0))
        let link = try await central.connect(peer, timeout: .seconds(10), reconnect: policy)
        let peripheral = try await Peripheral(connection: link)
        let stream = try await peripheral.subscribe(to: Soak.labCounter)
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == Soak.counter(1))

        // Every connection attempt after the kill, counted as it is announced.
        let attempts = Atomic<Int>(0)
        let events = await central.connectionEvents()
        let watcher = Task {
            for await e in events {
                switch e.event {
                case .connecting, .reconnecting: attempts.add(1, ordering: .relaxed)
                default: break
                }
            }
        }

        radio.kill()

        #expect(await states.next() == .transportLost)
        do {
            while try await values.next() != nil {}
            Issue.record("the notification stream ended without an error")
        } catch let error as GATTError {
            guard case .disconnected(let who, let reason) = error else {
                Issue.record("expected GATTError.disconnected, got \(error)")
                return
            }
            #expect(who == BluetoothAddress(device.address))
            #expect(reason.contains("lost"))
        }
        #expect(await !link.isConnected)
        await #expect(throws: ConnectionError.adapterNotReady(.transportLost)) { try await central.connect(peer) }

        // Three seconds with the adapter gone: not one reconnect attempt.
        try await Task.sleep(for: .seconds(3))
        #expect(attempts.load(ordering: .relaxed) == 0)
        #expect(await central.snapshot.connectionCount == 0)

        await central.close()
        await watcher.value
        radio.stop()
    }
}
