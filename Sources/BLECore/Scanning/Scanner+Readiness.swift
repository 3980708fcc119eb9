/// Subscribers that wait for the adapter: a scan asked for while the adapter is `.unknown` or
/// `.resetting` (or that was running when a backend reported `.unknown`) stays subscribed and
/// starts when the controller is set up, or ends with `ScanError.notReadyInTime` after its
/// `readyTimeout`. A running scan waits through a reset or Hardware Error with no limit.
/// Terminal states end it with `ScanError.adapterNotReady`; `.poweredOff` does what the
/// subscriber's `ScanOptions.whenPoweredOff` says.
extension Scanner {
    /// Whether `sub` waits for the adapter with no time limit: powered off, and asked to wait.
    func waitsWithoutLimit(_ sub: ScanSubscriber) -> Bool {
        adapterState == .poweredOff && sub.options.whenPoweredOff == .wait
    }

    /// Arms `sub`'s ready timer, unless it is armed already.
    func awaitReady(_ sub: ScanSubscriber) {
        guard sub.readyTimer == nil else { return }
        let id = sub.id
        let waited = sub.options.readyTimeout
        sub.readyTimer = scheduler.schedule(after: waited) { [reference] in
            guard let scanner = reference.scanner else { return }
            scanner.finish(id, error: ScanError.notReadyInTime(scanner.adapterState, waited: waited))
        }
    }

    /// The controller is set up: nobody waits any more.
    func controllerReady() {
        for sub in subscribers.values {
            sub.readyTimer?.cancel()
            sub.readyTimer = nil
        }
    }

    /// The adapter went to `state`, not powered on, with its transport still open: the scan
    /// stops at the controller, and each subscriber ends or waits (see the type's comment).
    /// Returns once the controller scan is stopped.
    nonisolated(nonsending) func adapterDown(_ state: AdapterState) async {
        adapterState = state
        controllerDown = true
        for (id, sub) in subscribers {
            switch state {
            case .unknown, .resetting:
                awaitReady(sub)
            case .poweredOff where sub.options.whenPoweredOff == .wait:
                sub.readyTimer?.cancel()
                sub.readyTimer = nil
            default:
                finish(id, error: ScanError.adapterNotReady(state))
            }
        }
        reconcile()
        await settled()
    }

    /// The central is closing: every stream ends (without error) and nothing waits any more.
    nonisolated(nonsending) func close() async {
        closed = true
        await stopAll(error: nil)
    }
}
