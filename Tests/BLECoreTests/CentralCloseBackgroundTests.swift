import Testing
import Synchronization
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// Work the stack does with no caller waiting (LE Read Remote Features, Vol 4, Part E, 7.8.21,
/// of the link set-up after connecting; the scan resumed after a connect that paused it; a
/// reconnect attempt) runs as the host's background tasks: `Central.close()` returns only
/// once they have ended, so nothing holds a closed host and nothing reaches the controller
/// after it.
@Suite(.timeLimit(.minutes(1)))
struct CentralCloseBackgroundTests {
    final class Weak: @unchecked Sendable { // set once by the test, read by the same test
        weak var host: HCIHost?
    }

    @Test func closeEndsTheLinkSetUpThatWaitsForAnUnansweredCommand() async throws {
        let weak = Weak()
        let vc: VirtualController
        do {
            // Two command credits: the disconnect of `close()` goes out while that command waits.
            let (controller, central) = try await VC.stack { $0.numHCICommandPackets = 2 }
            vc = controller
            weak.host = central.host
            // HCI_LE_Read_Remote_Features (OGF 0x08, OCF 0x0016) is never answered.
            vc.answer(HCIOpcode(rawValue: 0x2016), with: .none, times: 1)
            _ = try await central.connect(VC.peer)
            _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x2016))
            #expect(await central.host.backgroundTasks.count == 1)
            await central.close()
            #expect(await central.host.backgroundTasks.isEmpty)
        }
        // The command's 1 s timeout never passed (the clock did not move): the host is gone all the same.
        #expect(weak.host == nil)
        _ = vc
    }

    static let leSetScanParameters = HCIOpcode(rawValue: 0x200B)
    static let leSetScanEnable = HCIOpcode(rawValue: 0x200C)
    static let leCreateConnection = HCIOpcode(rawValue: 0x200D)

    @Test func closeEndsTheScanResumedAfterAConnectThatPausedIt() async throws {
        let weak = Weak()
        let vc: VirtualController
        do {
            let (controller, central) = try await VC.stack { $0.numHCICommandPackets = 2 }
            vc = controller
            weak.host = central.host
            let scan = await central.scan()
            let subscriber = Task { for try await _ in scan {} }
            _ = try await vc.waitForCommand(Self.leSetScanEnable)
            await central.withScanner { await $0.settled() }
            // LE Create Connection gets Command Disallowed once: the central stops the scan,
            // connects, then resumes the scan; the resumed scan's LE Set Scan Parameters is
            // never answered.
            vc.answer(Self.leCreateConnection, with: .status(.commandDisallowed), times: 1)
            vc.answer(Self.leSetScanParameters, with: .none, times: 1)
            _ = try await central.connect(VC.peer)
            _ = try await vc.waitForCommand(Self.leSetScanParameters, count: 2)
            // The resume and the scanner's reconciliation it started.
            #expect(await central.host.backgroundTasks.count >= 2)
            // `close()` stops the scan first, so it waits for that command until its 2 s
            // timeout passes on the virtual clock.
            let closing = vc.task { await central.close() }
            await vc.advance(by: .seconds(2))
            await closing.value
            #expect(await central.host.backgroundTasks.isEmpty)
            let sent = vc.commandsReceived.count
            await vc.settle()
            #expect(vc.commandsReceived.count == sent)
            subscriber.cancel()
            _ = await subscriber.result
        }
        #expect(weak.host == nil)
        _ = vc
    }

    @Test func closeEndsTheReconnectAttemptThatWaitsForItsCommandStatus() async throws {
        let weak = Weak()
        let vc: VirtualController
        do {
            let (controller, central) = try await VC.stack { $0.numHCICommandPackets = 2 }
            vc = controller
            weak.host = central.host
            let policy = ReconnectPolicy.always(maxAttempts: 3, backoff: .exponential(initial: .milliseconds(500), jitter: 0))
            let link = try await central.connect(VC.peer, reconnect: policy)
            _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x2016))
            await vc.settle()
            var events = await link.events().makeAsyncIterator()
            // The reconnect attempt's LE Create Connection is never answered.
            vc.answer(Self.leCreateConnection, with: .none, times: 1)
            try vc.disconnect(VC.peer, reason: .connectionTimeout)
            #expect(await events.next() == .disconnected(reason: .connectionTimeout, willReconnect: true))
            await vc.advance(by: .milliseconds(500))
            _ = try await vc.waitForCommand(Self.leCreateConnection, count: 2)
            #expect(await !central.host.backgroundTasks.isEmpty)
            await central.close()
            #expect(await central.host.backgroundTasks.isEmpty)
            #expect(await !link.isConnected)
        }
        #expect(weak.host == nil)
        _ = vc
    }

    /// The reopen after a transport loss (`Options.reopenAfterTransportLoss`), waiting out its
    /// backoff while the adapter is away, with its watcher of the adapter's appearances:
    /// `close()` returns once both have ended, and the central is then released.
    @Test func closeEndsTheReopenAndItsWatcherOfAppearances() async throws {
        final class Away: Sendable {
            let present = Atomic<Bool>(true)
            let watcherEnded = Atomic<Bool>(false)
        }
        let away = Away()
        weak var weakCentral: Central?
        let vc = VirtualController()
        do {
            var options = vc.centralOptions()
            options.reopenAfterTransportLoss = AdapterReopenPolicy(
                backoff: .exponential(initial: .seconds(1), multiplier: 2, maximum: .seconds(8), jitter: 0),
                appearances: { _ in
                    AsyncStream { continuation in continuation.onTermination = { _ in away.watcherEnded.store(true, ordering: .relaxed) } }
                })
            let central = Central(opening: { () throws(TransportError) in
                guard away.present.load(ordering: .relaxed) else { throw .noSuchAdapter(index: 0, available: []) }
                return vc.makeTransport()
            }, name: "virtual", options: options)
            weakCentral = central
            try await central.powerOn()
            var events = await central.reopenEvents().makeAsyncIterator()
            away.present.store(false, ordering: .relaxed)
            vc.closeTransport()
            // The first attempt fails; the reopen waits out its backoff, never answered.
            guard case .attemptFailed(1, _, _)? = await events.next() else {
                Issue.record("expected the first reopen attempt to fail")
                return
            }
            #expect(await central.reopening.task != nil)
            await central.close()
            #expect(await central.reopening.task == nil)
            let watcherEnded = away.watcherEnded.load(ordering: .relaxed)
            #expect(watcherEnded)
        }
        await vc.advance(by: .seconds(60))
        #expect(weakCentral == nil)
    }

    /// What a background task saw: that it ran, whether it was cancelled, and how its command ended.
    final class Seen: Sendable {
        let ran = Atomic<Bool>(false)
        let cancelled = Atomic<Bool>(false)
        let ended = Atomic<Bool>(false)
        let error = Mutex<HCIError?>(nil)
    }

    /// Starts a background task of `host` from the host's executor, as the stack's actors do.
    static func startBackground(_ host: isolated HCIHost, _ work: @escaping @Sendable (isolated HCIHost) async -> Void) -> Task<Void, Never> {
        host.backgroundTask(work)
    }

    /// A task started after `close()` is neither lost nor kept: its work runs, cancelled from
    /// its start; its command fails at once with the lost transport and never reaches the
    /// controller; it leaves the host's registry when it ends.
    @Test func aTaskStartedAfterCloseRunsCancelledAndLeavesTheRegistry() async throws {
        let (vc, central) = try await VC.stack()
        await central.close()
        let sent = vc.commandsReceived.count
        let seen = Seen()
        let task = await Self.startBackground(central.host) { host in
            seen.ran.store(true, ordering: .relaxed)
            seen.cancelled.store(Task.isCancelled, ordering: .relaxed)
            do throws(HCIError) {
                // HCI_LE_Read_Remote_Features (OGF 0x08, OCF 0x0016) on handle 0x0040.
                _ = try await host.send(HCICommand.leReadRemoteFeatures(handle: 0x0040))
            } catch {
                seen.error.withLock { $0 = error }
            }
        }
        await task.value
        let ran = seen.ran.load(ordering: .relaxed)
        #expect(ran)
        let cancelled = seen.cancelled.load(ordering: .relaxed)
        #expect(cancelled)
        guard case .transportLost? = seen.error.withLock({ $0 }) else {
            Issue.record("expected the command of a task started after close to fail with .transportLost, got \(String(describing: seen.error.withLock { $0 }))")
            return
        }
        #expect(await central.host.backgroundTasks.isEmpty)
        await vc.settle()
        #expect(vc.commandsReceived.count == sent)
    }

    /// A task that a background task starts while `close()` ends them (here, after its
    /// unanswered command failed with the closed transport) starts cancelled, and `close()`
    /// waits for it too.
    @Test func closeWaitsForATaskStartedWhileItEndsTheOthers() async throws {
        let (vc, central) = try await VC.stack { $0.numHCICommandPackets = 2 }
        let readRemoteFeatures = HCIOpcode(rawValue: 0x2016)
        vc.answer(readRemoteFeatures, with: .none, times: 1)
        let seen = Seen()
        _ = await Self.startBackground(central.host) { host in
            _ = try? await host.send(HCICommand.leReadRemoteFeatures(handle: 0x0040))
            host.background { _ in
                seen.ran.store(true, ordering: .relaxed)
                seen.cancelled.store(Task.isCancelled, ordering: .relaxed)
                seen.ended.store(true, ordering: .relaxed)
            }
        }
        _ = try await vc.waitForCommand(readRemoteFeatures)
        #expect(await central.host.backgroundTasks.count == 1)
        await central.close()
        let ended = seen.ended.load(ordering: .relaxed)
        #expect(ended)
        let cancelled = seen.cancelled.load(ordering: .relaxed)
        #expect(cancelled)
        #expect(await central.host.backgroundTasks.isEmpty)
    }


    /// Background tasks keep the order they were started in, ahead of work queued on the
    /// executor after them: each task's first job is queued during the call that starts it.
    @Test func backgroundTasksRunInTheOrderTheyWereStarted() async throws {
        let (_, central) = try await VC.stack()
        final class Order: Sendable { let names = Mutex<[String]>([]) }
        let order = Order()
        let tasks = await Self.startTwoThenQueue(central.host) { name in order.names.withLock { $0.append(name) } }
        for task in tasks { await task.value }
        // A hop onto the executor: it runs after the work queued there before it.
        _ = await central.host.backgroundTasks
        let names = order.names.withLock { $0 }
        #expect(names == ["first", "second", "queued after"])
        await central.close()
    }

    static func startTwoThenQueue(_ host: isolated HCIHost, _ record: @escaping @Sendable (String) -> Void) -> [Task<Void, Never>] {
        let first = host.backgroundTask { _ in record("first") }
        let second = host.backgroundTask { _ in record("second") }
        host.executor.queue.async { record("queued after") }
        return [first, second]
    }

}
