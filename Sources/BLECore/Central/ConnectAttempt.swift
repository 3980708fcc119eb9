import BLEWire

/// The one connection attempt pending at the controller, as a value: LE (Extended) Create
/// Connection going out, its completion (LE Connection Complete, Vol 4, Part E, 7.7.65.1),
/// the connect timeout and the caller's cancellation (LE Create Connection Cancel, 7.8.13,
/// after which the controller completes the attempt with Unknown Connection Identifier 0x02).
/// It does no I/O: `Central` (Central+Connect.swift) feeds it what happened and carries out
/// the actions (stop the running timer, send the cancel, resume the caller, end the attempt).
/// `Waiter` names the caller's wait, `Completion` what the attempt ends with.
///
///     var attempt = ConnectAttempt<Int, String>(peer: peer, pausedScan: false)
///     _ = attempt.handle(.waitStarted(waiter: 1))
///     let actions = attempt.handle(.timedOut(.timeout(peer: peer, milliseconds: 15000)))  // [.stopTimer, .sendCancel]
package struct ConnectAttempt<Waiter: Hashable & Sendable, Completion: Sendable>: Sendable {
    package let peer: LEAddress
    /// The scan was paused for this attempt: it resumes when the attempt ends.
    package let pausedScan: Bool
    /// A background attempt through the Filter Accept List: `peer` only names it; the
    /// completion names the device.
    package var usesAcceptList: Bool
    package private(set) var phase = Phase.sending

    package init(peer: LEAddress, pausedScan: Bool, usesAcceptList: Bool = false) {
        self.peer = peer
        self.pausedScan = pausedScan
        self.usesAcceptList = usesAcceptList
    }

    package enum Phase: Sendable {
        /// The create command is going out; its caller does not wait yet.
        case sending
        /// The completion arrived before the caller started waiting (a fast controller can
        /// send it right behind the Command Status).
        case completedEarly(Completion)
        /// The caller waits for the completion or its connect timeout.
        case waiting(waiter: Waiter)
        /// LE Create Connection Cancel is out: `error` is reported when the attempt ends.
        /// Without a `waiter` the caller was cancelled and has returned: the attempt ends
        /// without it and ends the attempt (the connect turn) then.
        case aborting(error: ConnectionError, waiter: Waiter?)
        /// Over: the central forgets it.
        case ended
    }

    package enum Event: Sendable {
        /// The caller waits now; the central armed the connect timeout.
        case waitStarted(waiter: Waiter)
        /// The connect timeout passed, or a background attempt must make way: cancel at the
        /// controller, then report `error` to the caller.
        case timedOut(ConnectionError)
        /// The waiting caller's task was cancelled: it returns `.cancelled` now and the
        /// attempt is cancelled at the controller without it.
        case callerLeft
        /// The caller's task was cancelled after the create command went out, before its
        /// Command Status.
        case callerLeftBeforeStatus
        /// The attempt ended at the controller (LE Connection Complete of any status, or the
        /// cancel's limit passed, or the adapter went away).
        case completed(Completion)
    }

    package enum Action: Sendable {
        /// Stop the running timer (the connect timeout, or the cancel's limit).
        case stopTimer
        /// Send LE Create Connection Cancel and arm its limit; when it passes, the attempt
        /// completes with `error`.
        case sendCancel(ConnectionError)
        /// The caller returned and the attempt goes on without it (it ends the attempt itself).
        case handOff
        /// Hand `completion` to the waiting caller.
        case resume(Waiter, Completion)
        /// A completion nobody takes any more: end the link it made, if it made one.
        case dropCompleted(Completion)
        /// The attempt is over at the controller: release the connect turn, resume a paused scan.
        case endAttempt
    }

    /// The error to report once an attempt being cancelled ends.
    package var abortError: ConnectionError? {
        if case .aborting(let error, _) = phase { return error }
        return nil
    }

    /// The caller waiting for the completion, if one waits.
    package var waiter: Waiter? {
        switch phase {
        case .waiting(let waiter), .aborting(_, let waiter?): return waiter
        default: return nil
        }
    }

    package var isEnded: Bool {
        if case .ended = phase { return true }
        return false
    }

    /// Takes one event; returns what the central must do, in order.
    package mutating func handle(_ event: Event) -> [Action] {
        switch (event, phase) {
        case (.waitStarted(let waiter), .sending):
            phase = .waiting(waiter: waiter)
            return []
        case (.timedOut(let error), .waiting(let waiter)):
            phase = .aborting(error: error, waiter: waiter)
            return [.stopTimer, .sendCancel(error)]
        case (.callerLeft, .waiting), (.callerLeftBeforeStatus, .waiting):
            phase = .aborting(error: .cancelled(peer: peer), waiter: nil)
            return [.stopTimer, .sendCancel(.cancelled(peer: peer)), .handOff]
        case (.callerLeft, .sending), (.callerLeftBeforeStatus, .sending):
            phase = .aborting(error: .cancelled(peer: peer), waiter: nil)
            return [.sendCancel(.cancelled(peer: peer)), .handOff]
        case (.callerLeft, .aborting(let error, _?)), (.callerLeftBeforeStatus, .aborting(let error, _?)):
            phase = .aborting(error: error, waiter: nil)
            return [.handOff]
        case (.callerLeftBeforeStatus, .completedEarly(let completion)):
            phase = .ended
            return [.dropCompleted(completion), .endAttempt]
        case (.completed(let completion), .sending):
            phase = .completedEarly(completion)
            return []
        case (.completed(let completion), .waiting(let waiter)), (.completed(let completion), .aborting(_, let waiter?)):
            phase = .ended
            return [.stopTimer, .resume(waiter, completion)]
        case (.completed, .aborting(_, nil)):
            phase = .ended
            return [.stopTimer, .endAttempt]
        default:
            // Nothing to do: a completion after the first, a timeout after the wait ended,
            // a cancellation of a caller already gone.
            return []
        }
    }
}

extension ConnectAttempt.Phase: Equatable where Completion: Equatable {}
extension ConnectAttempt.Action: Equatable where Completion: Equatable {}
extension ConnectAttempt: Equatable where Completion: Equatable {}
