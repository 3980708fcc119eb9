import BLEWire

/// The one connection attempt pending at the controller, as a value: LE (Extended) Create
/// Connection going out (Vol 4, Part E, 7.8.12, 7.8.66), its completion (LE Connection
/// Complete, 7.7.65.1, or LE Enhanced Connection Complete, 7.7.65.10), the connect timeout and
/// the caller's cancellation (LE Create Connection Cancel, 7.8.13, after which the controller
/// completes the attempt with Unknown Connection Identifier 0x02, or with Success when the
/// link was made first). It does no I/O: `Central` (Central+Connect.swift) feeds it what
/// happened and carries out the actions (stop the running timer, send the cancel, resume the
/// caller, end a link nobody takes, end the attempt). A link made is handed to the caller, whose
/// `Connection` runs the rest of its life in `LinkLifecycle`. `Waiter` names the caller's
/// wait, `Link` the link a successful attempt made.
///
///     var attempt = ConnectAttempt<Int, String>(peer: peer, pausedScan: false)
///     _ = attempt.handle(.waitStarted(waiter: 1))
///     let actions = attempt.handle(.timedOut(.timeout(peer: peer, milliseconds: 15000)))  // [.stopTimer, .sendCancel]
package struct ConnectAttempt<Waiter: Hashable & Sendable, Link: Sendable>: Sendable {
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

    /// What the attempt ends with for its caller.
    package typealias Outcome = Result<Link, ConnectionError>

    package enum Phase: Sendable {
        /// The create command is going out; its caller does not wait yet.
        case sending
        /// The attempt ended before the caller started waiting (a fast controller can send the
        /// completion right behind the Command Status).
        case completedEarly(Outcome)
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
        /// LE (Enhanced) Connection Complete with status Success: the attempt made `Link`.
        case connectionComplete(Link)
        /// LE (Enhanced) Connection Complete with an error status: Unknown Connection
        /// Identifier (0x02) after a cancel, Connection Failed to be Established (0x3E), ...
        case connectionFailed(HCIStatus)
        /// The attempt ended without a completion: the cancel's limit passed, or the adapter
        /// or the transport went away.
        case abandoned(ConnectionError)
    }

    package enum Action: Sendable {
        /// Stop the running timer (the connect timeout, or the cancel's limit).
        case stopTimer
        /// Send LE Create Connection Cancel and arm its limit; when it passes, the attempt
        /// is abandoned with `error`.
        case sendCancel(ConnectionError)
        /// The caller returned and the attempt goes on without it (it ends the attempt itself).
        case handOff
        /// Hand the outcome to the waiting caller.
        case resume(Waiter, Outcome)
        /// A link nobody takes (its attempt was cancelled): end it with HCI Disconnect.
        case dropLink(Link)
        /// The attempt is over at the controller: release the connect turn, resume a paused scan.
        case endAttempt
        /// An event with nothing to do in this phase (log it): a timeout after the wait ended,
        /// a cancellation of a caller already gone, a failure after the first completion.
        case ignored(Event)
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
        case (.callerLeftBeforeStatus, .completedEarly(let outcome)):
            phase = .ended
            if case .success(let link) = outcome { return [.dropLink(link), .endAttempt] }
            return [.endAttempt]
        case (.connectionComplete, .sending), (.connectionFailed, .sending), (.abandoned, .sending):
            phase = .completedEarly(outcome(of: event, aborted: nil))
            return []
        case (.connectionComplete, .waiting(let waiter)), (.connectionFailed, .waiting(let waiter)), (.abandoned, .waiting(let waiter)):
            phase = .ended
            return [.stopTimer, .resume(waiter, outcome(of: event, aborted: nil))]
        case (.connectionComplete(let link), .aborting(let error, let waiter)):
            // The link was made before the cancel took effect: nobody takes it.
            phase = .ended
            return [.stopTimer, .dropLink(link), waiter.map { .resume($0, .failure(error)) } ?? .endAttempt]
        case (.connectionFailed, .aborting(let error, let waiter)), (.abandoned, .aborting(let error, let waiter)):
            phase = .ended
            return [.stopTimer, waiter.map { .resume($0, outcome(of: event, aborted: error)) } ?? .endAttempt]
        case (.connectionComplete(let link), .completedEarly):
            // A second link for one attempt: nobody takes it.
            return [.dropLink(link), .ignored(event)]
        default:
            return [.ignored(event)]
        }
    }

    /// What a completion (or the attempt's end without one) means for the caller; an attempt
    /// being cancelled reports `aborted`, unless it was abandoned for a reason of its own.
    private func outcome(of event: Event, aborted: ConnectionError?) -> Outcome {
        switch event {
        case .connectionComplete(let link): return .success(link)
        case .connectionFailed(let status): return .failure(aborted ?? .failed(peer: peer, status: status))
        case .abandoned(let error): return .failure(error)
        default: return .failure(aborted ?? .cancelled(peer: peer))
        }
    }

    /// The phase's name for a log line.
    package var phaseName: String {
        switch phase {
        case .sending: return "sending"
        case .completedEarly: return "completed early"
        case .waiting: return "waiting"
        case .aborting: return "aborting"
        case .ended: return "ended"
        }
    }
}

/// What a connect attempt hands over when it made a link: the Connection_Handle and the
/// parameters of LE (Enhanced) Connection Complete. The link's life goes on in `LinkLifecycle`.
package struct MadeLink: Sendable, Hashable {
    package var handle: UInt16
    package var parameters: ConnectionParameters

    package init(handle: UInt16, parameters: ConnectionParameters) {
        self.handle = handle
        self.parameters = parameters
    }
}

extension ConnectAttempt.Event {
    /// The event's name for a log line.
    package var name: String {
        switch self {
        case .waitStarted: return "wait started"
        case .timedOut(let error): return "timed out (\(error))"
        case .callerLeft: return "caller left"
        case .callerLeftBeforeStatus: return "caller left before the Command Status"
        case .connectionComplete: return "LE Connection Complete"
        case .connectionFailed(let status): return "LE Connection Complete (\(status))"
        case .abandoned(let error): return "abandoned (\(error))"
        }
    }
}

extension ConnectAttempt.Phase: Equatable where Link: Equatable {}
extension ConnectAttempt.Event: Equatable where Link: Equatable {}
extension ConnectAttempt.Action: Equatable where Link: Equatable {}
extension ConnectAttempt: Equatable where Link: Equatable {}
