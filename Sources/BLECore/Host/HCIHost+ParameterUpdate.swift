import BLEWire

/// A peripheral's Connection Parameter Update Requests (Core Spec Vol 3, Part A, 4.20 and
/// 4.21), coalesced per link: one LE Connection Update (Vol 4, Part E, 7.8.18) is under way at
/// a time, and of the requests accepted meanwhile only the latest is applied after it. A
/// flood of requests costs one response each and at most two commands.
extension HCIHost {
    /// Where a link's parameter updates stand.
    enum ParameterUpdateState {
        case idle
        /// LE Connection Update `attempt` is under way until its LE Connection Update Complete
        /// (or its failure, or `parameterUpdateTimeout`); `next` is the latest request accepted
        /// meanwhile.
        case applying(attempt: UInt64, next: ConnectionParameterRange?, timer: (any ScheduledTimer)?)
    }

    /// How long an LE Connection Update may take before the next one is sent anyway: the
    /// update instant is at least 6 connection events away (Vol 6, Part B, 5.1.1), and
    /// intervals reach 4 s.
    static let parameterUpdateTimeout: Duration = .seconds(40)

    func parameterUpdateAccepted(link: Link, _ range: ConnectionParameterRange) {
        switch link.parameterUpdate {
        case .idle:
            applyParameterUpdate(link: link, range)
        case .applying(let attempt, let replaced, let timer):
            if replaced != nil { logger.log(.debug, "\(link.peer.address): a newer parameter update request replaces the pending one") }
            link.parameterUpdate = .applying(attempt: attempt, next: range, timer: timer)
        }
    }

    func applyParameterUpdate(link: Link, _ range: ConnectionParameterRange) {
        safeguards.parameterUpdateAttempts &+= 1
        let attempt = safeguards.parameterUpdateAttempts
        let handle = link.handle
        let timer = scheduler.schedule(after: Self.parameterUpdateTimeout) { [weak self] in
            self?.assumeIsolated { $0.parameterUpdateFinished(handle: handle, attempt: attempt) }
        }
        link.parameterUpdate = .applying(attempt: attempt, next: nil, timer: timer)
        background { await $0.sendParameterUpdate(handle: handle, range, attempt: attempt) }
    }

    func sendParameterUpdate(handle: UInt16, _ range: ConnectionParameterRange, attempt: UInt64) async {
        do {
            try await send(HCICommand.leConnectionUpdate(handle: handle, range.hciParameters))
        } catch {
            logger.log(.warning, "LE Connection Update for handle \(handle.hex) failed: \(error)")
            parameterUpdateFinished(handle: handle, attempt: attempt)
        }
    }

    /// LE Connection Update Complete for `handle`: the update under way is over.
    func parameterUpdateCompleted(handle: UInt16) {
        guard let link = links[handle], case .applying(let attempt, _, _) = link.parameterUpdate else { return }
        parameterUpdateFinished(handle: handle, attempt: attempt)
    }

    /// Update `attempt` ended (completed, failed or timed out): the latest pending request goes next.
    func parameterUpdateFinished(handle: UInt16, attempt: UInt64) {
        guard let link = links[handle], case .applying(attempt, let next, let timer) = link.parameterUpdate else { return }
        timer?.cancel()
        link.parameterUpdate = .idle
        if let next { applyParameterUpdate(link: link, next) }
    }

    func parameterUpdateLinkLost(_ link: Link) {
        if case .applying(_, _, let timer) = link.parameterUpdate { timer?.cancel() }
        link.parameterUpdate = .idle
    }
}
