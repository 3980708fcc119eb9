import Testing
import Foundation
import Synchronization
import BLETestSupport
import BLEWire
import BLETransport
import BLECore
import GATTClient

/// Eight links at once against Bumble's controllers (Fixtures/peers/scenarios/links.json):
/// seven steady counters and one peripheral that ends its first link after 20 notifications.
/// Every link streams notifications at the same time; the dropped one is restored by
/// `ReconnectPolicy.always` after the backoff, its stream carries on with no value delivered
/// twice, and the other seven keep receiving, in order, during the outage.
@Suite(.serialized, .enabled(if: Soak.radioAvailable))
struct ManyLinksRadioTests {
    /// The scenario's initial backoff (jitter 0, so every first retry waits exactly this long).
    static let backoff = Duration.milliseconds(200)
    /// The dropper's counter values the test waits for after the reconnect.
    static let valuesAfterReconnect = 20

    /// Counter values with the instant each arrived, per device id.
    final class Received: Sendable {
        private let values = Mutex<[String: [(at: ContinuousClock.Instant, value: UInt32)]]>([:])
        func add(_ id: String, _ value: UInt32) {
            let now = ContinuousClock.now
            values.withLock { $0[id, default: []].append((now, value)) }
        }
        func of(_ id: String) -> [(at: ContinuousClock.Instant, value: UInt32)] { values.withLock { $0[id] ?? [] } }
    }

    /// Connection events with the instant each was seen.
    final class Events: Sendable {
        private let events = Mutex<[(at: ContinuousClock.Instant, event: PeerConnectionEvent)]>([])
        func add(_ e: PeerConnectionEvent) {
            let now = ContinuousClock.now
            events.withLock { $0.append((now, e)) }
        }
        /// The lifecycle events of `peer` (parameter, data length and PHY changes left out).
        func lifecycle(of peer: LEAddress) -> [(at: ContinuousClock.Instant, event: ConnectionEvent)] {
            events.withLock { all in
                all.filter { $0.event.peer == peer }.compactMap { entry in
                    switch entry.event.event {
                    case .parametersUpdated, .dataLengthChanged, .phyChanged: return nil
                    default: return (entry.at, entry.event.event)
                    }
                }
            }
        }
    }

    /// Passes the radio's transport through and stamps, as they cross it on the adapter
    /// queue, each Disconnection Complete (Vol 4, Part E, 7.7.5: event 0x05), LE Connection
    /// Complete (7.7.65.1 / 7.7.65.10: event 0x3E, subevent 0x01 / 0x0A) and LE Create
    /// Connection (7.8.12: opcode 0x200D): timing from these does not depend on when a
    /// test task gets to run.
    final class StampingTransport: HCITransport, Sendable {
        enum Kind: Sendable { case disconnectionComplete, connectionComplete, createConnection }
        let base: any HCITransport
        private let stamps = Mutex<[(at: ContinuousClock.Instant, kind: Kind)]>([])
        init(_ base: any HCITransport) { self.base = base }
        var name: String { base.name }
        private func stamp(_ kind: Kind) {
            let now = ContinuousClock.now
            stamps.withLock { $0.append((now, kind)) }
        }
        func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
            try base.start(on: queue) { [weak self] event in
                if case .packet(.event(let e)) = event {
                    if e.code == 0x05 { self?.stamp(.disconnectionComplete) }
                    if e.code == 0x3E, e.parameters.first == 0x01 || e.parameters.first == 0x0A { self?.stamp(.connectionComplete) }
                }
                handler(event)
            }
        }
        func send(_ packet: HCIPacket) throws(TransportError) {
            if case .command(let c) = packet, c.opcode == HCIOpcode(rawValue: 0x200D) { stamp(.createConnection) }
            try base.send(packet)
        }
        func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) { base.setACLReceiver(receiver) }
        func close() { base.close() }
        func whenReleased(_ completion: @escaping @Sendable () -> Void) { base.whenReleased(completion) }
        /// The first stamp of `kind` after `instant`.
        func first(_ kind: Kind, after instant: ContinuousClock.Instant) -> ContinuousClock.Instant? {
            stamps.withLock { $0.first { $0.kind == kind && $0.at > instant }?.at }
        }
    }

    /// The counter generator's value: uint32 little-endian (virtual_radio.py `counter`).
    static func counterValue(_ bytes: [UInt8]) -> UInt32? {
        guard bytes.count == 4 else { return nil }
        return bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    @Test(.timeLimit(.minutes(1)))
    func eightLinksStreamWhileOneIsDroppedAndRestored() async throws {
        let testStart = ContinuousClock.now
        try await VirtualRadio.with(scenario: "links") { radio in
            #expect(radio.devices.count == 8)
            let hci = StampingTransport(try TransportSpec.parse(radio.transportSpec).open())
            let central = Central(transport: hci)
            try await central.powerOn()
            let events = Events()
            let eventStream = await central.connectionEvents()
            let eventRecorder = Task { for await e in eventStream { events.add(e) } }

            // Bumble never answers LE Set PHY (Fixtures/peers/README.md): do not ask for 2M.
            var parameters = ConnectionRequestParameters()
            parameters.request2MPHY = false
            let policy = ReconnectPolicy.always(maxAttempts: 5, backoff: .exponential(initial: Self.backoff, jitter: 0))

            var peripherals: [(id: String, peer: LEAddress, peripheral: Peripheral)] = []
            for device in radio.devices {
                let peer = try #require(LEAddress(device.address, type: .random))
                let link = try await central.connect(peer, timeout: .seconds(10), reconnect: policy, parameters: parameters)
                peripherals.append((device.id, peer, try await Peripheral(connection: link)))
            }
            #expect(await central.snapshot.connectionCount == 8)
            let connectedAt = ContinuousClock.now

            // All eight streams at once, each subscribed before its task drains it.
            let received = Received()
            let dropper = try #require(peripherals.first { $0.id == "dropper" })
            var consumers: [Task<Void, any Error>] = []
            for entry in peripherals {
                let stream = try await entry.peripheral.subscribe(to: Soak.labCounter)
                let id = entry.id
                let isDropper = id == "dropper"
                consumers.append(Task {
                    var afterReconnect = 0
                    for try await bytes in stream {
                        guard let value = Self.counterValue(bytes) else {
                            Issue.record("\(id): \(bytes) is not a uint32 counter value")
                            return
                        }
                        received.add(id, value)
                        if isDropper, events.lifecycle(of: dropper.peer).filter({ if case .connected = $0.event { true } else { false } }).count == 2 {
                            afterReconnect += 1
                            if afterReconnect == Self.valuesAfterReconnect { return }
                        }
                    }
                })
            }

            // The dropper's stream ends its wait once 20 values came over the restored link;
            // a failure there (the stream thrown, the reconnect never happening) ends the test.
            let dropperTask = consumers[peripherals.firstIndex { $0.id == "dropper" }!]
            let watchdog = Task {
                try await Task.sleep(for: .seconds(15))
                dropperTask.cancel()
            }
            try await dropperTask.value
            watchdog.cancel()
            for task in consumers where task != dropperTask { task.cancel() }
            for task in consumers { _ = try? await task.value }
            let streamingTime = ContinuousClock.now - connectedAt
            await central.close()
            await eventRecorder.value

            // The dropped link: connecting, connected, then the peer's drop (reason 0x13),
            // the announced backoff, the second attempt and the restored link.
            let lifecycle = events.lifecycle(of: dropper.peer)
            let kinds = lifecycle.map(\.event)
            guard kinds.count >= 6 else {
                Issue.record("dropper lifecycle too short: \(kinds)\n\(radio.recentLog)")
                return
            }
            #expect(kinds[0] == .connecting(attempt: 1))
            guard case .connected = kinds[1] else { Issue.record("expected connected, got \(kinds[1])"); return }
            guard case .disconnected(let reason, let willReconnect) = kinds[2] else { Issue.record("expected disconnected, got \(kinds[2])"); return }
            #expect(reason == .remoteUserTerminatedConnection)
            #expect("\(reason)".contains("Remote User Terminated Connection"))
            #expect(willReconnect)
            #expect(kinds[3] == .reconnecting(attempt: 1, delay: Self.backoff))
            #expect(kinds[4] == .connecting(attempt: 2))
            guard case .connected = kinds[5] else { Issue.record("expected connected, got \(kinds[5])"); return }
            // Then only the close at the end of the test.
            #expect(kinds.count == 7, "no further drop or attempt: \(kinds)")
            let dropAt = lifecycle[2].at
            let attemptAt = lifecycle[4].at
            let restoredAt = lifecycle[5].at
            #expect(attemptAt > dropAt && restoredAt > attemptAt)
            // The backoff from the HCI packets themselves: the events above are stamped when the
            // recording task gets them, which under load can be long after the stack saw them.
            // Only the dropper reconnects, so the first Disconnection Complete after the link
            // was up is its drop, and the next LE Create Connection is its second attempt.
            let hciDrop = try #require(hci.first(.disconnectionComplete, after: connectedAt))
            let hciAttempt = try #require(hci.first(.createConnection, after: hciDrop))
            let hciRestored = try #require(hci.first(.connectionComplete, after: hciAttempt))
            let backoffObserved = hciAttempt - hciDrop
            #expect(backoffObserved >= Self.backoff, "the second attempt began \(backoffObserved) after the drop")
            #expect(hciRestored - hciDrop >= Self.backoff, "the link was back \(hciRestored - hciDrop) after the drop")

            // The dropper's values: strictly increasing (nothing delivered twice, nothing out of
            // order), values from before the drop and from after the reconnect, each run gapless.
            let dropperValues = received.of("dropper")
            let values = dropperValues.map(\.value)
            #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 }, "dropper values: \(values)")
            let before = dropperValues.filter { $0.at < dropAt }.map(\.value)
            let after = dropperValues.filter { $0.at > restoredAt }.map(\.value)
            #expect(before.first == 1)
            #expect(before == Array(1...UInt32(max(1, before.count))), "before the drop: \(before)")
            #expect(after.count >= Self.valuesAfterReconnect)
            if let first = after.first, let last = before.last {
                #expect(first > last)
                #expect(after == Array(first..<first + UInt32(after.count)), "after the reconnect: \(after)")
            }

            // The other seven: every value in order, none missing or repeated, and values kept
            // arriving while the dropper was away; none of their links dropped.
            var duringOutage: [String: Int] = [:]
            for entry in peripherals where entry.id != "dropper" {
                let got = received.of(entry.id)
                let values = got.map(\.value)
                #expect(!values.isEmpty)
                #expect(values == Array(1...UInt32(max(1, values.count))), "\(entry.id): \(values)")
                let outage = got.filter { $0.at > dropAt && $0.at < restoredAt }.count
                duringOutage[entry.id] = outage
                #expect(outage >= 2, "\(entry.id) received \(outage) values during the outage")
                // connecting, connected, and the close at the end.
                let steadyLifecycle = events.lifecycle(of: entry.peer).map(\.event)
                var closedForGood = false
                if case .disconnected(_, false)? = steadyLifecycle.last { closedForGood = true }
                #expect(steadyLifecycle.count == 3 && closedForGood, "\(entry.id): \(steadyLifecycle)")
            }
            print("""
                eight links: backoff observed \(backoffObserved) (configured \(Self.backoff)), \
                outage \(hciRestored - hciDrop), values per steady link during the outage \(duringOutage.values.sorted()), \
                dropper values before/after \(before.count)/\(after.count), streaming \(streamingTime), \
                whole test \(ContinuousClock.now - testStart)
                """)
        }
    }
}
