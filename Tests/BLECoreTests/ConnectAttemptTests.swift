import Testing
import BLECore
import BLEWire

/// `ConnectAttempt` from tables: (phase, event) -> (actions, phase). The attempt is LE Create
/// Connection (Core Spec Vol 4, Part E, 7.8.12) until LE Connection Complete (7.7.65.1); a
/// timeout or a cancelled caller sends LE Create Connection Cancel (7.8.13), after which the
/// controller completes the attempt with Unknown Connection Identifier (0x02), or with Success
/// when the link was made before the cancel took effect (the cancel's Command Complete then
/// carries Command Disallowed, 0x0C); only a completion ends the attempt. Waiters are numbers
/// and links strings here.
@Suite struct ConnectAttemptTests {
    typealias Attempt = ConnectAttempt<Int, String>
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_02), type: .random)
    static let timeout = ConnectionError.timeout(peer: peer, milliseconds: 15000)
    static let cancelled = ConnectionError.cancelled(peer: peer)
    static let lost = ConnectionError.adapterNotReady(.resetting)
    /// Unknown Connection Identifier (Vol 1, Part F, 2.2): a cancelled attempt's completion.
    static let unknownConnection = HCIStatus(rawValue: 0x02)
    /// Connection Failed to be Established (Vol 1, Part F, 2.62).
    static let failedToEstablish = HCIStatus(rawValue: 0x3E)

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
        Row(name: "a completion before the caller waits is kept for it", before: [], event: .connectionComplete("handle 0x0040"),
            actions: [], after: .completedEarly(.success("handle 0x0040"))),
        Row(name: "a failed completion before the caller waits is kept for it", before: [], event: .connectionFailed(failedToEstablish),
            actions: [], after: .completedEarly(.failure(.failed(peer: peer, status: failedToEstablish)))),
        Row(name: "a completion goes to the waiting caller", before: [.waitStarted(waiter: 1)], event: .connectionComplete("handle 0x0040"),
            actions: [.stopTimer, .resume(1, .success("handle 0x0040"))], after: .ended),
        Row(name: "Connection Failed to be Established (0x3E) goes to the waiting caller", before: [.waitStarted(waiter: 1)],
            event: .connectionFailed(failedToEstablish),
            actions: [.stopTimer, .resume(1, .failure(.failed(peer: peer, status: failedToEstablish)))], after: .ended),
        Row(name: "an attempt abandoned (the adapter reset) fails the waiting caller", before: [.waitStarted(waiter: 1)], event: .abandoned(lost),
            actions: [.stopTimer, .resume(1, .failure(lost))], after: .ended),
        Row(name: "a timeout cancels at the controller, the caller keeps waiting", before: [.waitStarted(waiter: 1)], event: .timedOut(timeout),
            actions: [.stopTimer, .sendCancel(timeout)], after: .aborting(error: timeout, waiter: 1)),
        Row(name: "the completion of a cancelled attempt (0x02) gives the caller the timeout", before: [.waitStarted(waiter: 1), .timedOut(timeout)],
            event: .connectionFailed(unknownConnection), actions: [.stopTimer, .resume(1, .failure(timeout))], after: .ended),
        Row(name: "cancel racing Connection Complete: the link made is ended, the caller gets the timeout",
            before: [.waitStarted(waiter: 1), .timedOut(timeout)], event: .connectionComplete("handle 0x0040"),
            actions: [.stopTimer, .dropLink("handle 0x0040"), .resume(1, .failure(timeout))], after: .ended),
        Row(name: "cancel racing Connection Complete without the caller: the link is ended with the attempt",
            before: [.waitStarted(waiter: 1), .callerLeft], event: .connectionComplete("handle 0x0040"),
            actions: [.stopTimer, .dropLink("handle 0x0040"), .endAttempt], after: .ended),
        Row(name: "the cancel's limit passes: the attempt is abandoned with the timeout", before: [.waitStarted(waiter: 1), .timedOut(timeout)],
            event: .abandoned(timeout), actions: [.stopTimer, .resume(1, .failure(timeout))], after: .ended),
        Row(name: "the adapter lost while cancelling: the caller learns that, not the timeout", before: [.waitStarted(waiter: 1), .timedOut(timeout)],
            event: .abandoned(lost), actions: [.stopTimer, .resume(1, .failure(lost))], after: .ended),
        Row(name: "a timeout after the attempt was cancelled is a stray", before: [.waitStarted(waiter: 1), .timedOut(timeout)],
            event: .timedOut(timeout), actions: [.ignored(.timedOut(timeout))], after: .aborting(error: timeout, waiter: 1)),
        Row(name: "a waiting caller cancelled returns; the attempt is cancelled without it", before: [.waitStarted(waiter: 1)],
            event: .callerLeft, actions: [.stopTimer, .sendCancel(cancelled), .handOff], after: .aborting(error: cancelled, waiter: nil)),
        Row(name: "a caller cancelled while its attempt is cancelled leaves it", before: [.waitStarted(waiter: 1), .timedOut(timeout)],
            event: .callerLeft, actions: [.handOff], after: .aborting(error: timeout, waiter: nil)),
        Row(name: "a caller already gone is not handed off twice", before: [.waitStarted(waiter: 1), .callerLeft],
            event: .callerLeft, actions: [.ignored(.callerLeft)], after: .aborting(error: cancelled, waiter: nil)),
        Row(name: "an attempt without its caller ends it at its completion", before: [.waitStarted(waiter: 1), .callerLeft],
            event: .connectionFailed(unknownConnection), actions: [.stopTimer, .endAttempt], after: .ended),
        Row(name: "a caller cancelled before the Command Status: cancel at the controller", before: [],
            event: .callerLeftBeforeStatus, actions: [.sendCancel(cancelled), .handOff], after: .aborting(error: cancelled, waiter: nil)),
        Row(name: "a caller cancelled before the Command Status of an attempt that completed: the link is dropped",
            before: [.connectionComplete("handle 0x0040")], event: .callerLeftBeforeStatus,
            actions: [.dropLink("handle 0x0040"), .endAttempt], after: .ended),
        Row(name: "a caller cancelled before the Command Status of an attempt that failed: the attempt ends",
            before: [.connectionFailed(failedToEstablish)], event: .callerLeftBeforeStatus,
            actions: [.endAttempt], after: .ended),
        Row(name: "a second link for one attempt is ended", before: [.connectionComplete("handle 0x0040")], event: .connectionComplete("handle 0x0041"),
            actions: [.dropLink("handle 0x0041"), .ignored(.connectionComplete("handle 0x0041"))], after: .completedEarly(.success("handle 0x0040"))),
        Row(name: "a failure after the first completion is a stray", before: [.connectionComplete("handle 0x0040")], event: .connectionFailed(unknownConnection),
            actions: [.ignored(.connectionFailed(unknownConnection))], after: .completedEarly(.success("handle 0x0040"))),
        Row(name: "a timeout before the caller waits is a stray", before: [], event: .timedOut(timeout),
            actions: [.ignored(.timedOut(timeout))], after: .sending),
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
