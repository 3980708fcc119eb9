import Testing
import BLECore
import BLEWire

/// `ConnectAttempt` from tables: (phase, event) -> (actions, phase). The attempt is LE Create
/// Connection (Core Spec Vol 4, Part E, 7.8.12) until LE Connection Complete (7.7.65.1); a
/// timeout or a cancelled caller sends LE Create Connection Cancel (7.8.13), after which the
/// controller completes the attempt with Unknown Connection Identifier (0x02), and only that
/// completion ends the attempt. Waiters are numbers and completions strings here.
@Suite struct ConnectAttemptTests {
    typealias Attempt = ConnectAttempt<Int, String>
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_02), type: .random)
    static let timeout = ConnectionError.timeout(peer: peer, milliseconds: 15000)
    static let cancelled = ConnectionError.cancelled(peer: peer)

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let before: [Attempt.Event]
        let event: Attempt.Event
        let actions: [Attempt.Action]
        let after: Attempt.Phase
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "the caller starts waiting", before: [], event: .waitStarted(waiter: 1),
            actions: [], after: .waiting(waiter: 1)),
        Row(name: "a completion before the caller waits is kept for it", before: [], event: .completed("handle 0x0040"),
            actions: [], after: .completedEarly("handle 0x0040")),
        Row(name: "a completion goes to the waiting caller", before: [.waitStarted(waiter: 1)], event: .completed("handle 0x0040"),
            actions: [.stopTimer, .resume(1, "handle 0x0040")], after: .ended),
        Row(name: "a timeout cancels at the controller, the caller keeps waiting", before: [.waitStarted(waiter: 1)], event: .timedOut(timeout),
            actions: [.stopTimer, .sendCancel(timeout)], after: .aborting(error: timeout, waiter: 1)),
        Row(name: "the completion of a cancelled attempt goes to the caller", before: [.waitStarted(waiter: 1), .timedOut(timeout)],
            event: .completed("status 0x02"), actions: [.stopTimer, .resume(1, "status 0x02")], after: .ended),
        Row(name: "a timeout after the attempt was cancelled does nothing", before: [.waitStarted(waiter: 1), .timedOut(timeout)],
            event: .timedOut(timeout), actions: [], after: .aborting(error: timeout, waiter: 1)),
        Row(name: "a waiting caller cancelled returns; the attempt is cancelled without it", before: [.waitStarted(waiter: 1)],
            event: .callerLeft, actions: [.stopTimer, .sendCancel(cancelled), .handOff], after: .aborting(error: cancelled, waiter: nil)),
        Row(name: "a caller cancelled while its attempt is cancelled leaves it", before: [.waitStarted(waiter: 1), .timedOut(timeout)],
            event: .callerLeft, actions: [.handOff], after: .aborting(error: timeout, waiter: nil)),
        Row(name: "a caller already gone is not handed off twice", before: [.waitStarted(waiter: 1), .callerLeft],
            event: .callerLeft, actions: [], after: .aborting(error: cancelled, waiter: nil)),
        Row(name: "an attempt without its caller ends it at its completion", before: [.waitStarted(waiter: 1), .callerLeft],
            event: .completed("status 0x02"), actions: [.stopTimer, .endAttempt], after: .ended),
        Row(name: "a caller cancelled before the Command Status: cancel at the controller", before: [],
            event: .callerLeftBeforeStatus, actions: [.sendCancel(cancelled), .handOff], after: .aborting(error: cancelled, waiter: nil)),
        Row(name: "a caller cancelled before the Command Status of an attempt that completed: the link is dropped",
            before: [.completed("handle 0x0040")], event: .callerLeftBeforeStatus,
            actions: [.dropCompleted("handle 0x0040"), .endAttempt], after: .ended),
        Row(name: "a second completion is ignored", before: [.completed("handle 0x0040")], event: .completed("handle 0x0041"),
            actions: [], after: .completedEarly("handle 0x0040")),
        Row(name: "a timeout before the caller waits does nothing", before: [], event: .timedOut(timeout),
            actions: [], after: .sending),
    ]

    @Test(arguments: rows) func row(_ row: Row) {
        var attempt = Attempt(peer: Self.peer, pausedScan: false)
        for event in row.before { _ = attempt.handle(event) }
        let actions = attempt.handle(row.event)
        #expect(actions == row.actions)
        #expect(attempt.phase == row.after)
    }

    @Test func abortErrorAndWaiter() {
        var attempt = Attempt(peer: Self.peer, pausedScan: true)
        _ = attempt.handle(.waitStarted(waiter: 7))
        #expect(attempt.waiter == 7 && attempt.abortError == nil)
        _ = attempt.handle(.timedOut(Self.timeout))
        #expect(attempt.waiter == 7 && attempt.abortError == Self.timeout)
        _ = attempt.handle(.callerLeft)
        #expect(attempt.waiter == nil && attempt.abortError == Self.timeout && !attempt.isEnded)
    }
}
