import Testing
import Synchronization
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import BLEWire

/// Calls made while a dropped link is being restored by its reconnect policy, on the
/// in-process virtual controller in manual time with the lab `GATTServer`: they wait for the
/// restore and then run on the new link; they fail after one ATT transaction timeout when the
/// link does not come back; and they fail at once, with the reason, when the restore ends for
/// good (disconnect(), attempts exhausted, transport lost, central closed) or their task is
/// cancelled.
@Suite(.timeLimit(.minutes(1)))
struct CallsDuringOutageTests {
    static let peerText = "C0:11:22:33:44:77"
    static let backoff = ResubscribeAfterReconnectTests.backoff
    /// The lab pattern characteristic: 600 bytes, byte i = i & 0xFF (GATTDatabase.lab()).
    static let pattern: [UInt8] = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
    /// HCI_LE_Create_Connection_Cancel (Vol 4, Part E, 7.8.13): OGF 0x08, OCF 0x000E.
    static let leCreateConnectionCancel = HCIOpcode(rawValue: 0x200E)

    /// A call running in a task; `result` is nil until it ends.
    struct Call<T: Sendable>: Sendable {
        final class Box: Sendable {
            let result = Mutex<Result<T, GATTError>?>(nil)
        }
        let task: Task<Void, Never>
        let box: Box
        var result: Result<T, GATTError>? { box.result.withLock { $0 } }

        init(_ body: @escaping @Sendable () async throws(GATTError) -> T) {
            let box = Box()
            self.box = box
            task = Task {
                let r: Result<T, GATTError>
                do throws(GATTError) { r = .success(try await body()) } catch { r = .failure(error) }
                box.result.withLock { $0 = r }
            }
        }

        /// The outcome, which must come without moving virtual time (within `seconds` of real
        /// time). Otherwise the test fails, and cancelling the task and 31 s of virtual time
        /// release the call so that nothing hangs.
        func outcome(_ bed: LabBed, within seconds: Double = 5) async -> Result<T, GATTError>? {
            // The end of the call's task is the event waited for (bounded by real time).
            if await BLETestSupport.outcome(of: task, within: seconds) == nil {
                Issue.record("the call did not end within \(seconds) s without virtual time")
                task.cancel()
                await bed.vc.advance(by: .seconds(31))
            }
            await task.value
            return result
        }
    }

    static func read(_ bed: LabBed) -> Call<[UInt8]> {
        let peripheral = bed.peripheral
        return Call { () async throws(GATTError) in try await peripheral.read(Lab.pattern) }
    }

    /// Drops the link (supervision timeout, 0x08) and returns once the peripheral knows it is down.
    static func drop(_ bed: LabBed, _ events: inout AsyncStream<ConnectionEvent>.AsyncIterator) async throws {
        try bed.vc.disconnect(bed.peer, reason: .connectionTimeout)
        #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTimeout, willReconnect: true))
        #expect(await events.nextLifecycle() == .reconnecting(attempt: 1, delay: backoff))
        // The peripheral follows the link state in the same turn as the events above.
        #expect(await bed.peripheral.linkDown)
        #expect(await bed.link.isReconnecting)
    }

    /// Returns once `count` calls wait for the restore.
    static func waiting(_ bed: LabBed, _ count: Int = 1) async {
        do {
            try await bed.peripheral.restoreWaiters.waitForCount("\(count) calls waiting for the restore") { $0 >= count }
        } catch {
            Issue.record("\(error)")
        }
        #expect(await bed.peripheral.isolated { $0.restoreWaiters.count } == count)
    }

    /// The call failed with `GATTError.disconnected` naming the peer; returns the reason.
    static func disconnectedReason<T>(_ result: Result<T, GATTError>?) -> String? {
        guard case .failure(.disconnected(let who, let reason))? = result else {
            Issue.record("expected GATTError.disconnected, got \(String(describing: result))")
            return nil
        }
        #expect(who == BluetoothAddress(peerText))
        return reason
    }

    @Test func aReadDuringTheOutageRunsOnTheRestoredLink() async throws {
        let bed = try await LabBed(policy: ResubscribeAfterReconnectTests.always)
        _ = try await bed.peripheral.characteristics(of: Lab.service)
        var events = await bed.link.events().makeAsyncIterator()
        try await Self.drop(bed, &events)

        let read = Self.read(bed)
        await Self.waiting(bed) // waiting, not failed
        #expect(read.result == nil)
        await bed.vc.advance(by: Self.backoff)
        #expect(try await read.outcome(bed)?.get() == Self.pattern)
        let handle = try #require(await bed.link.handle)
        // ATT_READ_REQ (opcode 0x0A, Vol 3, Part F, 3.4.4.3) went out on the new link.
        #expect(bed.attPDUs(on: handle).contains { $0.first == 0x0A })
        #expect(await bed.peripheral.isolated { $0.restoreWaiters.isEmpty })
        await bed.central.close()
    }

    @Test func aCallDuringAnOutageThatLastsFailsAfterTheTransactionTimeout() async throws {
        // The first attempt two minutes after the drop (the backoff's cap is 30 s by default).
        let slow = ReconnectPolicy.always(maxAttempts: 3, backoff: .exponential(initial: .seconds(120), maximum: .seconds(120), jitter: 0))
        let bed = try await LabBed(policy: slow)
        var events = await bed.link.events().makeAsyncIterator()
        try bed.vc.disconnect(bed.peer, reason: .connectionTimeout)
        #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTimeout, willReconnect: true))
        // The peripheral follows the link state in the same turn as the drop.
        #expect(await bed.peripheral.linkDown)

        let read = Self.read(bed)
        await Self.waiting(bed)
        await bed.vc.advance(by: .seconds(29))
        #expect(await bed.peripheral.isolated { $0.restoreWaiters.count } == 1)
        #expect(read.result == nil)
        // The ATT transaction timeout, 30 s (Vol 3, Part F, 3.3.3).
        await bed.vc.advance(by: .seconds(1))
        let reason = Self.disconnectedReason(await read.outcome(bed))
        #expect(reason?.hasPrefix("the link was not restored within the ATT transaction timeout") == true, "\(reason ?? "")")
        #expect(await bed.link.isReconnecting, "the policy carries on")
        await bed.central.close()
    }

    /// The peripheral had made no call before the drop: it follows the connection from the start.
    @Test func disconnectDuringTheOutageFailsTheWaitingCallAtOnce() async throws {
        let bed = try await LabBed(policy: ResubscribeAfterReconnectTests.always)
        var events = await bed.link.events().makeAsyncIterator()
        try await Self.drop(bed, &events)
        let read = Self.read(bed)
        await Self.waiting(bed)
        let clock = bed.vc.elapsed

        // The application gives up on the link: the waiting call fails now, not after 30 s.
        try await bed.link.disconnect()
        let result = await read.outcome(bed)
        #expect(bed.vc.elapsed == clock, "no virtual time was needed")
        #expect(Self.disconnectedReason(result) == "disconnect() was called while the link was being restored")
        if case .failure(let error)? = result {
            #expect("\(error)" == "C0:11:22:33:44:77 disconnected: disconnect() was called while the link was being restored; connect again to go on")
        }
        #expect(await events.nextLifecycle() == .reconnectFailed(attempts: 0, lastError: "disconnect() was called while the link was being restored"))
        #expect(await bed.peripheral.isolated { $0.restoreWaiters.isEmpty })
        #expect(await !bed.link.isReconnecting)
        // No backoff timer or attempt is left: the link's one state is closed.
        #expect(await bed.link.linkState == .closed(.restoreEnded(attempts: 0, lastError: "disconnect() was called while the link was being restored")))
        #expect(await bed.central.connectionsByPeer.isEmpty)

        // Later calls fail at once the same way, and the backoff passes with no new attempt.
        let again = Self.read(bed)
        #expect(Self.disconnectedReason(await again.outcome(bed)) == "disconnect() was called while the link was being restored")
        await bed.vc.advance(by: .seconds(5))
        #expect(bed.createConnectionCount == 1)
        #expect(await !bed.link.isConnected)
        await bed.central.close()
    }

    /// disconnect() while the policy's LE Create Connection is pending at the controller: the
    /// waiting call fails at once and the attempt is cancelled (LE Create Connection Cancel).
    @Test func disconnectDuringAReconnectAttemptCancelsItAndFailsTheWaitingCall() async throws {
        let bed = try await LabBed(policy: ResubscribeAfterReconnectTests.always)
        var events = await bed.link.events().makeAsyncIterator()
        try await Self.drop(bed, &events)
        bed.vc.removePeripheral(bed.peer) // the attempt stays pending: the peer does not advertise
        let read = Self.read(bed)
        await Self.waiting(bed)
        await bed.vc.advance(by: Self.backoff)
        try await bed.vc.waitForCommand(LabBed.leCreateConnection, count: 2)
        #expect(await events.nextLifecycle() == .connecting(attempt: 2))
        #expect(read.result == nil)

        try await bed.link.disconnect()
        #expect(Self.disconnectedReason(await read.outcome(bed)) == "gave up reconnecting after 1 attempt: disconnect() was called while the link was being restored")
        #expect(await events.nextLifecycle() == .reconnectFailed(attempts: 1, lastError: "disconnect() was called while the link was being restored"))
        try await bed.vc.waitForCommand(Self.leCreateConnectionCancel)
        // LE Connection Complete (subevent 0x01) with status 0x02, Unknown Connection Identifier
        // (Vol 4, Part E, 7.8.13): the cancelled attempt ended.
        try await bed.vc.waitUntil("the cancelled attempt completed") { vc in
            vc.eventsSent.contains { $0.code == 0x3E && $0.parameters.prefix(2) == [0x01, 0x02] }
        }
        await bed.vc.settle()
        #expect(await bed.central.pendingConnect == nil)
        #expect(await bed.link.linkState == .closed(.restoreEnded(attempts: 1, lastError: "disconnect() was called while the link was being restored")))
        #expect(await bed.central.connectionsByPeer.isEmpty)
        #expect(await !bed.link.isConnected)
        await bed.central.close()
    }

    @Test func exhaustedReconnectAttemptsFailTheWaitingCallWithTheReconnectFailure() async throws {
        let once = ReconnectPolicy.always(maxAttempts: 1, backoff: .exponential(initial: Self.backoff, jitter: 0))
        let bed = try await LabBed(policy: once)
        var events = await bed.link.events().makeAsyncIterator()
        // The one attempt ends with Connection Failed to be Established (0x3E).
        bed.vc.failConnections(with: .connectionFailedToBeEstablished)
        try await Self.drop(bed, &events)
        let read = Self.read(bed)
        await Self.waiting(bed)

        await bed.vc.advance(by: Self.backoff)
        try await bed.vc.waitForCommand(LabBed.leCreateConnection, count: 2)
        let reason = Self.disconnectedReason(await read.outcome(bed))
        #expect(bed.vc.elapsed == Self.backoff, "failed at the end of the attempt, not after 30 s")
        #expect(reason?.hasPrefix("gave up reconnecting after 1 attempt: ") == true, "\(reason ?? "")")
        #expect(reason?.contains("0x3E") == true, "\(reason ?? "")")
        #expect(await events.nextLifecycle() == .connecting(attempt: 2))
        guard case .reconnectFailed(attempts: 1, _)? = await events.nextLifecycle() else {
            Issue.record("expected reconnectFailed after 1 attempt")
            return
        }
        #expect(await bed.peripheral.isolated { $0.restoreWaiters.isEmpty })
        #expect(await !bed.link.isReconnecting)
        await bed.central.close()
    }

    @Test func transportLostFailsTheWaitingCallAtOnce() async throws {
        let bed = try await LabBed(policy: ResubscribeAfterReconnectTests.always)
        var events = await bed.link.events().makeAsyncIterator()
        try await Self.drop(bed, &events)
        let read = Self.read(bed)
        await Self.waiting(bed)
        let clock = bed.vc.elapsed

        bed.vc.closeTransport()
        let reason = Self.disconnectedReason(await read.outcome(bed))
        #expect(bed.vc.elapsed == clock)
        #expect(reason?.hasPrefix("transport lost: ") == true, "\(reason ?? "")")
        guard case .reconnectFailed(attempts: 0, let why)? = await events.nextLifecycle() else {
            Issue.record("expected reconnectFailed")
            return
        }
        #expect(why == reason)
        #expect(await bed.central.state == .transportLost)
        #expect(await bed.peripheral.isolated { $0.restoreWaiters.isEmpty })
        await bed.central.close()
    }

    @Test func closingTheCentralFailsTheWaitingCallAtOnce() async throws {
        let bed = try await LabBed(policy: ResubscribeAfterReconnectTests.always)
        var events = await bed.link.events().makeAsyncIterator()
        try await Self.drop(bed, &events)
        let read = Self.read(bed)
        await Self.waiting(bed)

        await bed.central.close()
        #expect(Self.disconnectedReason(await read.outcome(bed)) == "the central was closed while the link was being restored")
        #expect(await bed.peripheral.isolated { $0.restoreWaiters.isEmpty })
    }

    /// A waiting call whose task is cancelled fails with `.cancelled`; the other waiting call
    /// still runs on the restored link (each waiter resumed exactly once).
    @Test func aCancelledWaitingCallFailsPromptlyAndTheOthersCarryOn() async throws {
        let bed = try await LabBed(policy: ResubscribeAfterReconnectTests.always)
        var events = await bed.link.events().makeAsyncIterator()
        try await Self.drop(bed, &events)
        let cancelled = Self.read(bed)
        let kept = Self.read(bed)
        await Self.waiting(bed, 2)

        cancelled.task.cancel()
        let result = await cancelled.outcome(bed)
        #expect(bed.vc.elapsed == .zero)
        guard case .failure(.cancelled(let operation, let target))? = result else {
            Issue.record("expected GATTError.cancelled, got \(String(describing: result))")
            return
        }
        #expect(operation == .waitingForRestore)
        #expect(target == .server)
        #expect(await bed.peripheral.isolated { $0.restoreWaiters.count } == 1)
        #expect(kept.result == nil)

        await bed.vc.advance(by: Self.backoff)
        #expect(try await kept.outcome(bed)?.get() == Self.pattern)
        #expect(await bed.peripheral.isolated { $0.restoreWaiters.isEmpty })
        // The timers of both waits are gone: 30 s later nothing fires into the peripheral.
        await bed.vc.advance(by: .seconds(30))
        #expect(try await Self.read(bed).outcome(bed)?.get() == Self.pattern)
        await bed.central.close()
    }

    /// With `.never` the link is not restored: a call made after the drop fails at once, even
    /// on a peripheral that made no call before it.
    @Test func withoutAPolicyACallAfterTheDropFailsAtOnce() async throws {
        let bed = try await LabBed(policy: .never)
        var events = await bed.link.events().makeAsyncIterator()
        try bed.vc.disconnect(bed.peer, reason: .connectionTimeout)
        #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTimeout, willReconnect: false))
        let reason = Self.disconnectedReason(await Self.read(bed).outcome(bed))
        #expect(bed.vc.elapsed == .zero)
        // Vol 1, Part F, 1.3: error code 0x08 is Connection Timeout.
        #expect(reason?.contains("0x08") == true, "\(reason ?? "")")
        await bed.central.close()
    }
}
