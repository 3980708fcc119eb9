import BLECore
import GATTClient
import Foundation
import Synchronization
import Testing
import BLETransport

/// Inside the qemu guest (started by `KernelTierReopenTests`): the adapter under an open
/// `Central.open("hci0")` is removed (`vhci-peer stop`: the Bumble controller closes
/// /dev/vhci and the kernel unregisters hci0) and registered again (`vhci-peer start`).
/// Enabled only with `BLE_IN_VM=1` and `BLE_KERNEL_TIER_REOPEN=1`, since it takes the adapter
/// away from every other guest test.
///
/// Expected values: the kernel answers a bind to an adapter index that does not exist with
/// ENODEV (`TransportError.noSuchAdapter`), and one still being set up by the kernel with EBUSY; the backoff's delays are the policy's numbers
/// (250 ms doubling to at most 2 s, no jitter); the rest comes from
/// Fixtures/peers/vhci_controller.py (adapter C0:00:00:00:00:01, HRM at F0:00:00:00:48:52).
@Suite(
    "Kernel tier, adapter removed and re-added, guest side (inside the VM)",
    .enabled(if: KernelTierGuest.inVM && KernelTierGuest.childRole == nil
             && ProcessInfo.processInfo.environment["BLE_KERNEL_TIER_REOPEN"] == "1"),
    .timeLimit(.minutes(6))
)
struct KernelTierReopenGuestTests {
    static let peerControl = "/run/kernel-vm/bin/vhci-peer"
    static let policy = AdapterReopenPolicy(backoff: .exponential(initial: .milliseconds(250), multiplier: 2, maximum: .seconds(2), jitter: 0))
    /// The policy's delay before attempt `k` after the last appearance, written out.
    static func expectedDelay(_ k: Int) -> Duration {
        let delays: [Duration] = [.milliseconds(250), .milliseconds(500), .seconds(1)]
        return k <= delays.count ? delays[k - 1] : .seconds(2)
    }

    /// What the central reported, stamped with the time since the scenario started.
    final class Timeline: Sendable {
        let start = ContinuousClock.now
        let states = Mutex<[AdapterState]>([])
        let events = Mutex<[(at: Duration, event: AdapterReopenEvent)]>([])
        let lines = Mutex<[String]>([])

        func note(_ text: String) {
            let ms = (ContinuousClock.now - start) / .milliseconds(1)
            lines.withLock { $0.append("KERNEL-TIER REOPEN \(String(format: "%8.1f", ms)) ms  \(text)") }
        }
    }

    @Test("hci0 removed under the central and re-added: reopened with backoff; scan, connect and GATT work again")
    func adapterRemovedAndReAdded() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringDown(index: 0) }
        let central = try await KernelTierGuest.afterRelease { try await Central.open("hci0") }
        let timeline = Timeline()
        do {
            try await Self.scenario(central, timeline)
        } catch {
            timeline.lines.withLock { $0.forEach { print($0) } }
            await central.close()
            throw error
        }
        timeline.lines.withLock { $0.forEach { print($0) } }
        await central.close()
        KernelTierGuest.pass("adapterRemovedAndReAdded")
    }

    static func scenario(_ central: Central, _ timeline: Timeline) async throws {
        let stateStream = await central.stateEvents()
        let recorder = Task {
            for await state in stateStream {
                timeline.states.withLock { $0.append(state) }
                timeline.note("state \(state)")
            }
        }
        defer { recorder.cancel() }
        let (reopenEvents, reopenSink) = AsyncStream.makeStream(of: AdapterReopenEvent.self)
        let eventStream = await central.reopenEvents()
        let forwarder = Task {
            for await event in eventStream {
                let at = ContinuousClock.now - timeline.start
                timeline.events.withLock { $0.append((at, event)) }
                timeline.note("\(event)")
                reopenSink.yield(event)
            }
            reopenSink.finish()
        }
        defer { forwarder.cancel() }

        // Remove the adapter: the user channel reads EPIPE, the central loses its transport.
        let lost = await central.stateEvents().filter { $0 == .transportLost }
        timeline.note("vhci-peer stop")
        let stop = try await KernelTierGuest.runProgram([peerControl, "stop"])
        try #require(stop.status == 0, "\(stop)")
        timeline.note("vhci-peer stop returned")
        try #require(await KernelTierGuest.first(of: lost, within: .seconds(30)) != nil, "no .transportLost within 30 s of removing hci0")
        let present = try HCIAdapters.list().map(\.index)
        try #require(!present.contains(0), "hci0 still registered after its controller exited: \(present)")

        // The application asks for the adapter back; it is away, so attempts fail and back off.
        let reopening = Task { try await central.reopen(policy) }
        let secondFailure = reopenEvents.filter { if case .attemptFailed(2, _, _) = $0 { return true } else { return false } }
        try #require(await KernelTierGuest.first(of: secondFailure, within: .seconds(30)) != nil, "no second failed attempt within 30 s")

        // Register it again; the kernel's New Index wakes the central's wait.
        let poweredOn = await central.stateEvents().filter { $0 == .poweredOn }
        timeline.note("vhci-peer start")
        let start = try await KernelTierGuest.runProgram([peerControl, "start"])
        try #require(start.status == 0, "\(start)")
        timeline.note("vhci-peer start returned (controller ready)")
        guard await KernelTierGuest.first(of: poweredOn, within: .seconds(120)) != nil else {
            reopening.cancel()
            Issue.record("not powered on within 120 s of re-adding the adapter; adapters: \((try? HCIAdapters.list()) ?? [])")
            return
        }
        let info = try await reopening.value
        try #require(info.address == KernelTierGuest.adapterAddress, "\(info)")

        // The state stream tells the whole story.
        let states = timeline.states.withLock { $0 }
        try #require(states == [.poweredOn, .transportLost, .resetting, .poweredOn], "states: \(states)")

        // Every failure came with the policy's delay, counted again from the adapter's appearance;
        // the first ones are the kernel's ENODEV; and the wall time between attempts was at
        // least that delay unless the appearance cut the wait short.
        let events = timeline.events.withLock { $0 }
        var sinceAppeared = 0, failures = 0, appeared = false
        var previous: (at: Duration, delay: Duration)?
        for (at, event) in events {
            switch event {
            case .attemptFailed(let attempt, let error, let delay):
                failures += 1
                sinceAppeared += 1
                try #require(attempt == failures, "attempt numbers: \(events.map(\.event))")
                // Attempts 1 and 2 ran before the controller was started again; a later one may
                // meet the kernel's own setup of the new hci0 (EBUSY) just before its New Index arrives.
                let transportError = error as? TransportError
                if attempt <= 2 {
                    try #require(transportError == .noSuchAdapter(index: 0, available: []), "attempt \(attempt) while hci0 was away: \(error)")
                } else if !appeared {
                    try #require(transportError == .noSuchAdapter(index: 0, available: []) || transportError == .busy(device: "hci0"), "attempt \(attempt): \(error)")
                }
                try #require(delay == expectedDelay(sinceAppeared) || delay == .zero, "attempt \(attempt): next in \(delay), expected \(expectedDelay(sinceAppeared))")
                if let previous {
                    // Stamped when the reader got each event: a tenth of the delay for its scheduling.
                    try #require(at - previous.at >= previous.delay * 0.9, "attempt \(attempt) came \(at - previous.at) after the last failure, before its \(previous.delay) backoff")
                }
                previous = (at, delay)
            case .adapterAppeared:
                appeared = true
                sinceAppeared = 0
                previous = nil
            case .reopened(let attempt):
                try #require(attempt == failures + 1, "reopened on attempt \(attempt) after \(failures) failures")
            }
        }
        try #require(failures >= 2, "events: \(events.map(\.event))")
        try #require(appeared, "the kernel's New Index for hci0 never woke the reopen (HCI monitor channel): \(events.map(\.event))")
        guard case .reopened? = events.last?.event else {
            Issue.record("the last reopen event is not .reopened: \(events.map(\.event))")
            return
        }

        // The adapter works again: scan, connect, GATT.
        let found = try await KernelTierGuest.scanForHRMWithAPI(central)
        timeline.note("scan found \(found.address)")
        let link = try await central.connect(found.address, timeout: .seconds(30))
        timeline.note("connected")
        try await KernelTierGuest.peripheralSession(try await Peripheral(connection: link))
        try await link.disconnect()
        timeline.note("GATT session done, disconnected")
    }
}
