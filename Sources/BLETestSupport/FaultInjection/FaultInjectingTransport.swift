import Dispatch
import Synchronization
import BLECore
import BLEWire
import BLETransport

/// An HCI transport that wraps another and misbehaves on purpose, by a script of rules or a
/// seeded pseudo-random plan: it drops, duplicates, delays (on its scheduler: put the
/// virtual controller's clock here and delays happen inside `advance(by:)`), truncates or
/// corrupts packets in either direction, and cuts the stream (the stack then sees
/// `.closed(.lost(...))`). The same seed gives the same faults on the same traffic.
///
/// Packets that pass are handed on synchronously on the start queue, as the inner transport
/// delivered them, so the wrapper adds no hop and no reordering of its own.
///
///     let faulty = FaultInjectingTransport(wrapping: vc.makeTransport(), scheduler: vc.clock,
///                                          plan: .random(.init(seed: 1, match: .acl(.toHost), drop: 0.05)))
///     let central = Central(transport: faulty, options: vc.centralOptions())
///     ...
///     faulty.cut(reason: "USB unplugged")
public final class FaultInjectingTransport: HCITransport {
    public let inner: any HCITransport
    public var name: String { "fault(\(inner.name))" }

    private let givenScheduler: (any TimerScheduler)?
    private let onQueueKey = DispatchSpecificKey<ObjectIdentifier>()
    /// Until `start`, the plan the controls set; from then on, the start queue (controls hop there).
    private let setup: Mutex<Setup>
    /// Everything that changes once started; made by `start`, owned by the start queue.
    private let running = AtomicLazyReference<QueueConfined<State>>()

    private struct Setup {
        var plan: FaultPlan
        var queue: DispatchQueue?
        var closedBeforeStart = false
    }

    /// At most this many applied faults are kept in `appliedFaults` (soak runs stay bounded).
    public static let logLimit = 10_000

    /// Wraps `inner`. `scheduler` times `.delay` faults (a dispatch timer on the start queue
    /// when nil); its work must run on the start queue.
    public init(wrapping inner: any HCITransport, scheduler: (any TimerScheduler)? = nil, plan: FaultPlan = .none) {
        self.inner = inner
        self.givenScheduler = scheduler
        self.setup = Mutex(Setup(plan: plan))
    }

    // MARK: HCITransport

    public func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        let state = setup.withLock { setup -> QueueConfined<State>? in
            guard setup.queue == nil, !setup.closedBeforeStart else { return nil }
            queue.setSpecific(key: onQueueKey, value: ObjectIdentifier(self))
            setup.queue = queue
            let state = QueueConfined(State(plan: setup.plan, scheduler: givenScheduler ?? DispatchTimerScheduler(queue: queue), handler: handler), on: queue)
            return running.storeIfNil(state)
        }
        guard let state else { throw .closed(endpoint: name) }
        do {
            try inner.start(on: queue) { [weak self] event in self?.fromController(event) }
        } catch {
            onQueue(state) {
                state.value.phase = .closed
                state.value.handler = nil
            }
            throw error
        }
    }

    public func send(_ packet: HCIPacket) throws(TransportError) {
        guard let state = running.load(), state.value.phase == .open else {
            if let cutReason = running.load()?.value.cutReason { throw .lost(endpoint: name, reason: cutReason) }
            throw .closed(endpoint: name)
        }
        switch state.value.outcome(of: packet, .toController) {
        case .deliver(let packets):
            for p in packets { try inner.send(p) }
        case .later(let p, let delay):
            schedule(state, after: delay) { transport, _ in try? transport.inner.send(p) }
        case .nothing:
            break
        case .cut:
            let reason = "cut by the fault plan while sending \(packet.type)"
            performCut(state, reason)
            throw .lost(endpoint: name, reason: reason)
        }
    }

    public func close() {
        let state = setup.withLock { setup -> QueueConfined<State>? in
            if setup.queue == nil { setup.closedBeforeStart = true }
            return running.load()
        }
        guard let state else { return inner.close() }
        let wasOpen = onQueue(state) { () -> Bool in
            guard state.value.phase != .closed else { return false }
            state.value.phase = .closed
            state.value.handler = nil
            state.value.cancelDelays()
            return true
        }
        if wasOpen { inner.close() }
    }

    public func whenReleased(_ completion: @escaping @Sendable () -> Void) {
        inner.whenReleased(completion)
    }

    // MARK: Controls (any task)

    /// Replaces the plan; rule counters and the random sequence start over (from the new seed).
    public func setPlan(_ plan: FaultPlan) {
        let state = setup.withLock { setup -> QueueConfined<State>? in
            if setup.queue == nil { setup.plan = plan }
            return running.load()
        }
        if let state { onQueue(state) { state.value.setPlan(plan) } }
    }

    /// Cuts the stream now: the inner transport closes, later sends throw `.lost`, and the
    /// stack receives `.closed(.lost(reason))` on its queue.
    public func cut(reason: String = "the stream was cut") {
        guard let state = running.load() else { return }
        onQueue(state) { self.performCut(state, reason) }
    }

    /// What was done to the packets travelling `direction` so far.
    public func statistics(_ direction: FaultDirection) -> FaultStatistics {
        guard let state = running.load() else { return FaultStatistics() }
        return onQueue(state) { state.value.stats[direction] ?? FaultStatistics() }
    }

    /// The faults applied so far, in order (the first `logLimit`).
    public var appliedFaults: [AppliedFault] {
        guard let state = running.load() else { return [] }
        return onQueue(state) { state.value.log }
    }

    /// Packets held back by `.delay` faults and not yet delivered.
    public var delayedPacketCount: Int {
        guard let state = running.load() else { return 0 }
        return onQueue(state) { state.value.pendingDelays.count }
    }

    /// Waits until `count` faults have been applied in all (a test's way to know a packet met
    /// its fault before moving virtual time). False when `timeout` of real time passes first,
    /// or when the waiting task is cancelled.
    ///
    ///     let first = Task { try await link.readRSSI() }
    ///     #expect(await faulty.waitForFaults(count: 1))
    public func waitForFaults(count: Int, timeout: Duration = .seconds(5)) async -> Bool {
        guard let state = running.load() else { return false }
        let queue = state.queue
        // Taken before the wait starts, so that a cancellation can find the waiter.
        let id = onQueue(state) { () -> UInt64 in
            state.value.nextWaiterID += 1
            state.value.unaddedFaultWaiters.insert(state.value.nextWaiterID)
            return state.value.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                queue.async {
                    // Gone from the set: the task was cancelled before this ran.
                    guard state.value.unaddedFaultWaiters.remove(id) != nil else { return c.resume(returning: false) }
                    if state.value.faultCount >= count { return c.resume(returning: true) }
                    // Real time, whatever clock the faults use: a safety net for a test that waits.
                    let timer = DispatchTimerScheduler(queue: queue).schedule(after: timeout) { [weak state] in
                        state?.value.stopWaiting(id)
                    }
                    state.value.faultWaiters.append(FaultWaiter(id: id, count: count, continuation: c, timeout: timer))
                }
            }
        } onCancel: {
            queue.async { state.value.stopWaiting(id) }
        }
    }

    // MARK: Internals (start queue)

    /// Runs `body` on the start queue, where `state` lives (directly when already there).
    private func onQueue<T>(_ state: QueueConfined<State>, _ body: () -> T) -> T {
        if DispatchQueue.getSpecific(key: onQueueKey) == ObjectIdentifier(self) { return body() }
        return state.queue.sync(execute: body)
    }

    private func fromController(_ event: TransportEvent) {
        guard let state = running.load(), state.value.phase == .open else { return }
        switch event {
        case .closed(let error):
            state.value.phase = .closed
            state.value.cancelDelays()
            let h = state.value.handler
            state.value.handler = nil
            h?(.closed(error))
        case .packet(let packet):
            switch state.value.outcome(of: packet, .toHost) {
            case .deliver(let packets):
                for p in packets where state.value.phase == .open {
                    let h = state.value.handler
                    h?(.packet(p))
                }
            case .later(let p, let delay):
                schedule(state, after: delay) { _, state in
                    let h = state.value.handler
                    h?(.packet(p))
                }
            case .nothing:
                break
            case .cut:
                performCut(state, "cut by the fault plan on a \(packet.type) packet from the controller")
            }
        }
    }

    private func performCut(_ state: QueueConfined<State>, _ reason: String) {
        guard state.value.phase == .open else { return }
        state.value.phase = .closed
        state.value.cutReason = reason
        state.value.cancelDelays()
        inner.close()
        let h = state.value.handler
        state.value.handler = nil
        let endpoint = name
        // Reported on a later turn: the stack may be inside `send` right now.
        state.queue.async { h?(.closed(.lost(endpoint: endpoint, reason: reason))) }
    }

    private func schedule(_ state: QueueConfined<State>, after delay: Duration,
                          _ work: @escaping @Sendable (FaultInjectingTransport, QueueConfined<State>) -> Void) {
        let id = state.value.nextDelayID
        state.value.nextDelayID += 1
        state.value.pendingDelays[id] = state.value.scheduler.schedule(after: delay) { [weak self, weak state] in
            guard let self, let state else { return }
            // Timer work runs on the start queue (the scheduler's contract).
            guard state.value.pendingDelays.removeValue(forKey: id) != nil, state.value.phase == .open else { return }
            work(self, state)
        }
    }

    // MARK: State (start queue)

    private enum Phase { case open, closed }

    private struct FaultWaiter {
        let id: UInt64
        let count: Int
        let continuation: CheckedContinuation<Bool, Never>
        let timeout: any ScheduledTimer
    }

    private enum Outcome {
        case deliver([HCIPacket])
        case later(HCIPacket, Duration)
        case nothing
        case cut
    }

    /// What the start queue owns: the plan and its counters, the statistics, the waiters and
    /// the delayed packets.
    private struct State {
        var phase = Phase.open
        let scheduler: any TimerScheduler
        var handler: (@Sendable (TransportEvent) -> Void)?
        var plan: FaultPlan
        var ruleUses: [Int] = []
        var rng = SplitMix64(seed: 0)
        var stats: [FaultDirection: FaultStatistics] = [.toController: FaultStatistics(), .toHost: FaultStatistics()]
        var log: [AppliedFault] = []
        var faultCount = 0
        var faultWaiters: [FaultWaiter] = []
        var nextWaiterID: UInt64 = 0
        /// Waiters whose id was taken and that are not added yet.
        var unaddedFaultWaiters: Set<UInt64> = []
        var pendingDelays: [UInt64: any ScheduledTimer] = [:]
        var nextDelayID: UInt64 = 0
        var cutReason: String?

        init(plan: FaultPlan, scheduler: any TimerScheduler, handler: @escaping @Sendable (TransportEvent) -> Void) {
            self.plan = plan
            self.scheduler = scheduler
            self.handler = handler
            resetPlanState()
        }

        mutating func setPlan(_ plan: FaultPlan) {
            self.plan = plan
            resetPlanState()
        }

        private mutating func resetPlanState() {
            if case .script(let rules) = plan { ruleUses = Array(repeating: 0, count: rules.count) } else { ruleUses = [] }
            if case .random(let r) = plan { rng = SplitMix64(seed: r.seed) }
        }

        /// Ends fault waiter `id` with false (its timeout or its task's cancellation), unless it
        /// already ended; one not added yet ends when it arrives.
        mutating func stopWaiting(_ id: UInt64) {
            if unaddedFaultWaiters.remove(id) != nil { return }
            guard let i = faultWaiters.firstIndex(where: { $0.id == id }) else { return }
            let w = faultWaiters.remove(at: i)
            w.timeout.cancel()
            w.continuation.resume(returning: false)
        }

        private mutating func resumeFaultWaiters() {
            guard !faultWaiters.isEmpty else { return }
            var kept: [FaultWaiter] = []
            for w in faultWaiters {
                if faultCount >= w.count {
                    w.timeout.cancel()
                    w.continuation.resume(returning: true)
                } else {
                    kept.append(w)
                }
            }
            faultWaiters = kept
        }

        mutating func cancelDelays() {
            pendingDelays.values.forEach { $0.cancel() }
            pendingDelays.removeAll()
        }

        mutating func outcome(of packet: HCIPacket, _ direction: FaultDirection) -> Outcome {
            let index = stats[direction, default: FaultStatistics()].packets
            stats[direction, default: FaultStatistics()].packets += 1
            guard let fault = chooseFault(packet, direction) else {
                stats[direction, default: FaultStatistics()].passed += 1
                return .deliver([packet])
            }
            if log.count < FaultInjectingTransport.logLimit {
                log.append(AppliedFault(direction: direction, packetIndex: index, packetType: packet.type, fault: fault))
            }
            faultCount += 1
            resumeFaultWaiters()
            switch fault {
            case .drop:
                stats[direction, default: FaultStatistics()].dropped += 1
                return .nothing
            case .duplicate:
                stats[direction, default: FaultStatistics()].duplicated += 1
                return .deliver([packet, packet])
            case .delay(let d):
                stats[direction, default: FaultStatistics()].delayed += 1
                return .later(packet, d)
            case .truncate(let n):
                stats[direction, default: FaultStatistics()].truncated += 1
                return .deliver([FaultInjectingTransport.truncated(packet, keeping: n)])
            case .corrupt(let offset, let mask):
                stats[direction, default: FaultStatistics()].corrupted += 1
                var body = packet.body
                guard offset >= 0, offset < body.count else { return .deliver([packet]) }
                body[offset] ^= mask
                guard let changed = try? HCIPacket(type: packet.type, body: body) else {
                    stats[direction, default: FaultStatistics()].unparseable += 1
                    return .nothing
                }
                return .deliver([changed])
            case .cut:
                return .cut
            }
        }
        private mutating func chooseFault(_ packet: HCIPacket, _ direction: FaultDirection) -> PacketFault? {
            switch plan {
            case .none:
                return nil
            case .script(let rules):
                // Every rule counts every packet it matches; the first whose window holds this one applies.
                var chosen: PacketFault?
                for (i, rule) in rules.enumerated() where rule.match.matches(packet, direction) {
                    let seen = ruleUses[i]
                    ruleUses[i] += 1
                    guard chosen == nil, seen >= rule.after else { continue }
                    if let count = rule.count, seen >= rule.after + count { continue }
                    chosen = rule.fault
                }
                return chosen
            case .random(let r):
                guard r.match.matches(packet, direction) else { return nil }
                var roll = rng.nextUnit()
                if roll < r.drop { return .drop }
                roll -= r.drop
                if roll < r.duplicate { return .duplicate }
                roll -= r.duplicate
                if roll < r.delay {
                    let ns = r.maximumDelay.nanoseconds
                    return .delay(.nanoseconds(Int64(clamping: ns == 0 ? 0 : rng.next() % (ns + 1))))
                }
                roll -= r.delay
                if roll < r.truncate {
                    let length = FaultInjectingTransport.payloadLength(packet)
                    guard length > 0 else { return nil }
                    return .truncate(keeping: Int(rng.next() % UInt64(length)))
                }
                roll -= r.truncate
                if roll < r.corrupt {
                    let range = FaultInjectingTransport.region(r.corruptRegion, of: packet)
                    guard !range.isEmpty else { return nil }
                    let offset = range.lowerBound + Int(rng.next() % UInt64(range.count))
                    let mask = UInt8(truncatingIfNeeded: rng.next() % 255 + 1)
                    return .corrupt(offset: offset, mask: mask)
                }
                return nil
            }
        }
    }

    // MARK: Packet surgery

    static func payloadLength(_ packet: HCIPacket) -> Int {
        switch packet {
        case .acl(let a): return a.data.count
        case .event(let e): return e.parameters.count
        case .command(let c): return c.parameters.count
        case .sco, .iso: return 0
        }
    }

    static func truncated(_ packet: HCIPacket, keeping n: Int) -> HCIPacket {
        let keep = max(0, n)
        switch packet {
        case .acl(var a): a.data = Array(a.data.prefix(keep)); return .acl(a)
        case .event(var e): e.parameters = Array(e.parameters.prefix(keep)); return .event(e)
        case .command(var c): c.parameters = Array(c.parameters.prefix(keep)); return .command(c)
        case .sco, .iso: return packet
        }
    }

    /// Offsets into `packet.body` of a region.
    static func region(_ region: RandomFaults.Region, of packet: HCIPacket) -> Range<Int> {
        let bodyCount: Int
        let hciHeader: Int
        var l2capHeader = 0
        switch packet {
        case .acl(let a):
            hciHeader = 4
            bodyCount = 4 + a.data.count
            if a.boundary != .continuing, a.data.count >= 4 { l2capHeader = 4 }
        case .event(let e):
            hciHeader = 2
            bodyCount = 2 + e.parameters.count
        case .command(let c):
            hciHeader = 3
            bodyCount = 3 + c.parameters.count
        case .sco(let raw), .iso(let raw):
            return 0..<raw.count
        }
        switch region {
        case .anywhere: return 0..<bodyCount
        case .hciHeader: return 0..<hciHeader
        case .l2capHeader: return hciHeader..<(hciHeader + l2capHeader)
        case .headers: return 0..<(hciHeader + l2capHeader)
        case .payload: return (hciHeader + l2capHeader)..<bodyCount
        }
    }
}
