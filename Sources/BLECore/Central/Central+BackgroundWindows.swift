import BLEWire

/// How background attempts and a scan share a controller that cannot scan and initiate at
/// once (LE Create Connection answered Command Disallowed, 0x0C, while it scans): they take
/// turns, so the scan never stops for longer than `initiating`.
///
///     var options = Central.Options()
///     options.backgroundScanWindows = BackgroundScanWindows(initiating: .seconds(3), scanning: .seconds(2))
public struct BackgroundScanWindows: Sendable, Hashable {
    /// Longest time one background attempt keeps the scan stopped; also how long an attempt
    /// lasts while a scan runs on a controller not yet known to do both at once.
    public var initiating: Duration
    /// How long the scan runs between two attempts.
    public var scanning: Duration

    public init(initiating: Duration = .seconds(5), scanning: Duration = .seconds(5)) {
        self.initiating = initiating
        self.scanning = scanning
    }
}

extension Central {
    /// One background attempt through the Filter Accept List. While a scan runs, the attempt
    /// lasts at most `backgroundScanWindows.initiating` (unless the controller showed it
    /// initiates while scanning): on a controller that cannot do both, its create command is
    /// refused and `establish` pauses the scan for it (holding the connect turn, so nothing
    /// else keeps the scan stopped), and once the attempt ends the scan runs for `.scanning`
    /// before the next one. Nil: the attempt's time passed with no link.
    func backgroundAttempt(_ first: LEAddress, _ bg: BackgroundConnect) async throws(ConnectionError) -> (UInt16, ConnectionParameters)? {
        let windows = options.backgroundScanWindows
        if bg.state.value.scanTurnDue, scanWanted {
            bg.state.value.scanTurnDue = false
            await waitForScanTurn(windows.scanning)
            // The sets changed meanwhile: the list is made again first.
            if bg.state.value.preempted || Task.isCancelled { return nil }
        }
        bg.state.value.scanTurnDue = false
        let scanning = scanWanted
        let lifetime = scanning && bg.state.value.initiatesWhileScanning != true ? windows.initiating : Self.backgroundAttemptLifetime
        let result: ConnectResult
        do throws(ConnectionError) {
            result = .success(try await establish(first, timeout: lifetime, parameters: bg.parameters, usesAcceptList: true))
        } catch {
            result = .failure(error)
        }
        // A refused create command made `establish` pause the scan; the resume it queued runs
        // after this job, so the scanner still says paused here.
        if scanning, scanner.paused {
            if bg.state.value.initiatesWhileScanning != false {
                options.logger.log(.info, "the controller cannot scan and initiate at once: background connections and the scan take turns (\(Self.seconds(windows.initiating)) s initiating at most, then \(Self.seconds(windows.scanning)) s scanning)")
            }
            bg.state.value.initiatesWhileScanning = false
            bg.state.value.scanTurnDue = true
        } else if scanning, bg.state.value.initiatesWhileScanning == nil {
            bg.state.value.initiatesWhileScanning = true
        }
        if case .failure(.timeout) = result { return nil }
        return try result.get()
    }

    /// The controller refused to start a scan (Command Disallowed): when a background attempt
    /// is pending, it makes way (cancelled at the controller), the controller is taken as one
    /// that cannot scan and initiate at once, and the scan runs its window before the next
    /// attempt. False when no background attempt is pending (the refusal is the scan's error).
    func backgroundAttemptMakesWayForScan() -> Bool {
        guard let pending = pendingConnect, pending.usesAcceptList, let bg = backgroundConnect else { return false }
        bg.state.value.initiatesWhileScanning = false
        bg.state.value.scanTurnDue = true
        preemptBackgroundConnect()
        return true
    }

    /// The scanner asks `backgroundAttemptMakesWayForScan` when the controller refuses a scan.
    func letBackgroundAttemptsMakeWayForScans() {
        guard scanner.yieldInitiator == nil else { return }
        scanner.yieldInitiator = { [weak self] in
            self?.assumeIsolated { $0.backgroundAttemptMakesWayForScan() } ?? false
        }
    }

    /// A scan has subscribers on a controller that is up.
    private var scanWanted: Bool {
        !scanner.subscribers.isEmpty && !scanner.controllerDown
    }

    /// Lets the scan run for `duration` (virtual time under a manual scheduler); returns
    /// early when the background connections stop (their loop is cancelled).
    private func waitForScanTurn(_ duration: Duration) async {
        let turn = Waiters<Void, Never>(executor: executor, scheduler: scheduler)
        _ = await turn.wait(deadline: (duration, .success(())), cancelled: { _ in .success(()) })
    }

    private static func seconds(_ d: Duration) -> String {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        return ms % 1000 == 0 ? "\(ms / 1000)" : "\(Double(ms) / 1000)"
    }
}
