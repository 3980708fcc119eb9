import BLEWire
import BLETransport

/// Drives the controller's scan for every subscriber of `Central.scan` and
/// `Central.discoveredPeripherals`, on the adapter executor.
///
/// One controller scan is shared: it starts with the first subscriber, runs with the union
/// of the subscribers' parameters (restarted when a new subscriber changes the union), and
/// stops when the last one leaves. Changes are applied by one reconciliation loop at a time
/// (`reconcile`), which keeps sending commands until the controller's state matches what the
/// current subscribers (and a pause for connecting) want, so concurrent subscribes and
/// unsubscribes can never leave the controller scanning for nobody or idle for somebody.
///
/// Devices are kept in a table bounded at `deviceLimit` entries (1000): when it is full, the
/// device heard least recently is dropped (its subscribers get `.lost`). While every
/// subscriber has a lost timeout, a device not heard for the longest of them leaves the table
/// too (`tableExpiry`), so rotating private addresses do not pile up. Reports are filtered
/// on their raw bytes before any advertising data is decoded, and a report whose bytes repeat
/// the previous one is not decoded again.
///
/// State confined to the adapter executor, not an actor: the `Central` owns it and calls it
/// from its isolated code; callbacks that run on the adapter queue (timers, the end of a
/// stream, the report reader, the reconciliation task) reach it through `reference`.
///
///     let scanner = Scanner(host: host, scheduler: scheduler, logger: logger)   // in Central.init
///     let stream = scanner.subscribe(filter: .all, options: ScanOptions())      // on the executor
final class Scanner {
    let executor: AdapterExecutor
    let host: HCIHost
    let scheduler: any TimerScheduler
    let logger: BLELogger

    /// Most devices kept at once; the least recently heard is evicted beyond it.
    var deviceLimit = 1000
    /// Most extended advertisements being reassembled at once.
    let fragmentLimit = 32
    /// Extended advertising data is at most 1650 octets (Vol 4, Part E, 7.8.54).
    static let maximumAdvertisingDataLength = 1650
    /// Structures one device's merged data may hold before it is rebuilt from its latest
    /// advertisement and scan response (two full legacy PDUs hold at most 30).
    static let mergedStructureLimit = 32

    var useExtended = false
    /// The controller can scan on LE Coded (extended scanning and the LE Coded PHY).
    var codedScanning = false
    /// Own_Address_Type of the scan parameters (the central's `OwnAddress`).
    var ownAddressType: UInt8 = 0x00
    var subscribers: [UInt64: ScanSubscriber] = [:]
    var nextSubscriberID: UInt64 = 0
    var devices: [DeviceKey: DeviceRecord] = [:]
    /// Resolves advertisers' private addresses to identities (AddressResolution.swift).
    var addressResolver: AddressResolver?
    var fragments: [FragmentKey: Fragment] = [:]
    var fragmentSequence: UInt64 = 0
    /// Fires when the oldest device may have passed `tableExpiry`.
    var expiryTimer: (any ScheduledTimer)?

    /// Connecting on a controller that cannot scan and initiate at once.
    var paused = false
    /// Asked when the controller refuses the scan (Command Disallowed) while a background
    /// connection attempt may be pending: true when one was asked to make way (the Central's
    /// `backgroundAttemptMakesWayForScan`); the scan then starts when the attempt has ended.
    var yieldInitiator: (@Sendable () -> Bool)?
    /// The scan waits for a background attempt to make way (`initiatorEnded()` starts it).
    var awaitingInitiator = false
    /// The controller is not set up (not yet, or again after a reset or a power-off): it scans
    /// for nobody, and the subscribers wait (`configure` lets the scan run again).
    var controllerDown = true
    /// Controller resets seen (`controllerReset()`), so a reconciliation can tell that one came
    /// while its command was answered.
    var resets = 0
    /// The central's adapter state, which names what a subscriber waited for (Scanner+Readiness.swift).
    var adapterState: AdapterState = .unknown
    /// The central is closed: no subscriber waits for it any more.
    var closed = false
    /// What the controller runs now; nil when it is not scanning.
    var applied: ControllerScanParameters?
    /// A job is queued to release the events held for the subscribers (`releaseEvents`).
    var releaseQueued = false
    var reconciling = false
    /// Callers of `settled()` by id.
    let settledWaiters: Waiters<Void, Never>
    var lostReason: String?

    /// Whether the controller is scanning now.
    var isScanning: Bool { applied != nil }

    /// What the adapter queue's callbacks hold: this scanner, weakly (the central owns it).
    /// Made on first use, on the queue (the central's init may run anywhere).
    private(set) lazy var reference = ScannerReference(WeakScanner(scanner: self), on: executor.queue)

    init(host: HCIHost, scheduler: any TimerScheduler, logger: BLELogger) {
        self.executor = host.executor
        self.host = host
        self.scheduler = scheduler
        self.logger = logger
        self.settledWaiters = Waiters(executor: host.executor, scheduler: scheduler)
    }

    /// Chooses legacy or extended scanning commands from the controller's capabilities.
    func configure(info: ControllerInfo) {
        useExtended = info.supportsExtendedScanning
        codedScanning = useExtended && info.leFeatures.contains(.leCodedPHY)
        lostReason = nil
        controllerDown = false
        controllerReady()
        reconcile()
    }

    /// The controller was reset (a Hardware Error, or HCI_Reset): it scans no more. The
    /// subscribers stay; the scan runs again for them once the controller is set up.
    func controllerReset() {
        controllerDown = true
        applied = nil
        resets &+= 1
    }

    // MARK: - Subscribers

    func subscribe(filter: ScanFilter, options: ScanOptions) -> ScanStream {
        let buffer = MulticastBuffer<ScanEvent>(executor: executor, name: "scan events of subscriber \(nextSubscriberID)", logger: logger)
        let stream = ScanStream(buffer.subscribe(bufferingPolicy: options.bufferingPolicy.atLeastOne))
        add(filter: filter, options: options, sink: .events(buffer)) { buffer.onSubscriberCountChange = $0 }
        return stream
    }

    func subscribeSnapshots(filter: ScanFilter, options: ScanOptions, interval: Duration) -> AsyncStream<[DiscoveredPeripheral]> {
        let broadcaster = Broadcaster<[DiscoveredPeripheral]>(executor: executor)
        let stream = broadcaster.subscribe(bufferingPolicy: .bufferingNewest(1))
        add(filter: filter, options: options, sink: .snapshots(broadcaster, interval: interval)) { broadcaster.onSubscriberCountChange = $0 }
        broadcaster.yield([])
        return stream
    }

    private func add(filter: ScanFilter, options: ScanOptions, sink: ScanSubscriber.Sink,
                     watch: (@escaping @Sendable (Int) -> Void) -> Void) {
        let id = nextSubscriberID
        nextSubscriberID += 1
        let sub = ScanSubscriber(id: id, filter: filter, options: options, sink: sink)
        if let lostReason {
            sub.sink.finish(ScanError.transportLost(lostReason))
            return
        }
        // The consumer stopped iterating: the stream's buffer (MulticastBuffer, or Broadcaster
        // for snapshots) calls this on the adapter queue.
        watch { [reference] count in
            if count == 0 { reference.scanner?.finish(id, error: nil) }
        }
        if let timeout = options.timeout {
            sub.timeoutTimer = scheduler.schedule(after: timeout) { [reference] in
                reference.scanner?.finish(id, error: nil)
            }
        }
        subscribers[id] = sub
        if controllerDown, !waitsWithoutLimit(sub) { awaitReady(sub) }
        logger.log(.debug, "scan subscriber \(id) joined (\(subscribers.count) now): \(sub.parameters)")
        reconcile()
    }

    /// Ends one subscriber's stream and lets the scan follow.
    func finish(_ id: UInt64, error: (any Error)?) {
        guard let sub = subscribers.removeValue(forKey: id) else { return }
        sub.cancelTimers()
        sub.sink.finish(error)
        logger.log(.debug, "scan subscriber \(id) left (\(subscribers.count) remain)")
        if subscribers.isEmpty {
            devices.removeAll()
            fragments.removeAll()
            expiryTimer?.cancel()
            expiryTimer = nil
        } else if expiryTimer == nil {
            // The one subscriber without a lost timeout may have left.
            scheduleExpiry()
        }
        reconcile()
    }

    private func finishAll(error: (any Error)?) {
        for id in Array(subscribers.keys) { finish(id, error: error) }
    }

    /// Ends every stream (with `error` when not nil) and waits until the scan is stopped.
    nonisolated(nonsending) func stopAll(error: (any Error)?) async {
        finishAll(error: error)
        await settled()
    }

    /// The transport is gone: streams end with an error saying so; nothing is sent any more.
    func transportLost(_ why: String) {
        lostReason = why
        applied = nil
        finishAll(error: ScanError.transportLost(why))
    }

    /// Stops the controller scan (for a connection attempt) and waits until it is stopped.
    nonisolated(nonsending) func pause() async {
        paused = true
        reconcile()
        await settled()
    }

    /// A connection attempt ended at the controller: a scan that waited for it starts.
    func initiatorEnded() {
        guard awaitingInitiator else { return }
        awaitingInitiator = false
        reconcile()
    }

    /// Lets the scan run again after `pause()`.
    nonisolated(nonsending) func resume() async {
        paused = false
        reconcile()
        await settled()
    }

    // MARK: - Controller state

    /// What the controller should run now: the union of the subscribers' wishes, or nothing.
    var target: ControllerScanParameters? {
        guard !paused, !controllerDown, lostReason == nil else { return nil }
        return ControllerScanParameters.union(subscribers.values.lazy.map(\.parameters))
    }

    /// Starts the reconciliation loop unless it is running (it re-reads `target` after every
    /// command, so it picks up this change too).
    func reconcile() {
        guard !reconciling else { return }
        guard applied != target else { return }
        reconciling = true
        // A task of the host's: `Central.close()` waits for it.
        host.background { [reference] _ in await reference.scanner?.runReconciliation() }
    }

    /// Returns once no reconciliation is running, or at once when the calling task is
    /// cancelled (the reconciliation goes on).
    nonisolated(nonsending) func settled() async {
        guard reconciling, !Task.isCancelled else { return }
        await settledWaiters.wait(cancelled: { _ in .success(()) }).get()
    }

    private nonisolated(nonsending) func runReconciliation() async {
        var retriedAfterDisallowed = false
        while lostReason == nil, applied != target {
            if let current = applied {
                do throws(HCIError) {
                    try await setEnable(false)
                } catch {
                    // Command Disallowed here means it was not scanning any more.
                    logger.log(.info, "stopping the scan (\(current)): \(error)")
                }
                applied = nil
                continue
            }
            guard let want = target else { break }
            do throws(HCIError) {
                let resetsBefore = resets
                try await setParameters(want)
                try await setEnable(true)
                // The transport may have gone, or the controller been reset, while the
                // command was answered: nothing scans then.
                guard lostReason == nil, resets == resetsBefore else { break }
                applied = want
                // The adapter went down (powered off) while the enable was answered: the
                // controller scans, and the next turn of the loop stops it.
                if controllerDown { continue }
                logger.log(.debug, "scanning: \(want)")
            } catch {
                // Failed by a Hardware Error: the scan starts again after the reset.
                if controllerDown { break }
                if case .commandFailed(_, .commandDisallowed) = error, !retriedAfterDisallowed {
                    // A kernel-owned or previously used controller may still be scanning: stop it once and retry.
                    retriedAfterDisallowed = true
                    try? await setEnable(false)
                    continue
                }
                if case .commandFailed(_, .commandDisallowed) = error, yieldInitiator?() == true {
                    // The controller initiates (a background attempt) and cannot scan meanwhile:
                    // the attempt makes way, and the scan starts when it has ended.
                    logger.log(.info, "the controller cannot scan while it initiates: the background connection attempt makes way for the scan")
                    awaitingInitiator = true
                    break
                }
                logger.log(.warning, "the controller refused to start the scan (\(want)): \(error)")
                finishAll(error: error)
            }
        }
        if lostReason != nil || controllerDown { applied = nil }
        reconciling = false
        settledWaiters.resumeAll(with: .success(()))
    }

    private nonisolated(nonsending) func setParameters(_ p: ControllerScanParameters) async throws(HCIError) {
        let type: UInt8 = p.active ? 0x01 : 0x00
        if p.phys.contains(.leCoded), !codedScanning {
            logger.log(.info, "scanning on LE 1M: the controller has no \(useExtended ? "LE Coded PHY" : "extended scanning") for LE Coded")
        }
        if useExtended {
            let phy = HCICommand.LEScanPHYParameters(scanType: type, scanInterval: p.interval, scanWindow: p.window)
            let coded = codedScanning && p.phys.contains(.leCoded)
            let le1M = p.phys.contains(.le1M) || !coded
            try await host.send(HCICommand.leSetExtendedScanParameters(HCICommand.LESetExtendedScanParameters(
                ownAddressType: ownAddressType, le1M: le1M ? phy : nil, leCoded: coded ? phy : nil)))
        } else {
            try await host.send(HCICommand.leSetScanParameters(HCICommand.LESetScanParameters(
                scanType: type, scanInterval: p.interval, scanWindow: p.window, ownAddressType: ownAddressType)))
        }
    }

    private nonisolated(nonsending) func setEnable(_ on: Bool) async throws(HCIError) {
        // Duplicate filtering stays off: subscribers de-duplicate themselves, and a filtering
        // controller would hide RSSI changes and the returns of lost devices.
        if useExtended {
            try await host.send(HCICommand.leSetExtendedScanEnable(HCICommand.LESetExtendedScanEnable(enable: on)))
        } else {
            try await host.send(HCICommand.leSetScanEnable(HCICommand.LESetScanEnable(enable: on)))
        }
    }
}

extension Scanner {
    /// Changes the device table bound (tests use a small one).
    func setDeviceLimit(_ limit: Int) { deviceLimit = max(1, limit) }
}

extension Scanner {
    /// Devices in the table now.
    func knownCount() -> Int { devices.count }
}

extension Central {
    /// Runs `body` with the scanner on the central's executor: the way in for code outside
    /// the central (tests).
    ///
    ///     await central.withScanner { await $0.settled() }
    func withScanner<T: Sendable>(_ body: nonisolated(nonsending) (Scanner) async -> T) async -> T {
        await body(scanner)
    }
}
