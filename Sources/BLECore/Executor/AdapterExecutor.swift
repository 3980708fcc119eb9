import Dispatch

/// The one serial executor of an adapter. Every actor of the stack for that adapter (its
/// host, central, connections, ATT bearers, peripherals) runs here, and the transport's reads
/// fire on the same `queue`, so a packet is decoded, routed and delivered without a hop.
///
///     let executor = AdapterExecutor(label: "hci0")
///     actor Host { nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() } }
public final class AdapterExecutor: SerialExecutor {
    /// The serial queue that backs the executor (Linux has no DispatchSerialQueue).
    public let queue: DispatchQueue
    private let key = DispatchSpecificKey<ObjectIdentifier>()

    public init(label: String) {
        queue = DispatchQueue(label: "ble.adapter.\(label)")
        queue.setSpecific(key: key, value: ObjectIdentifier(self))
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(complexEquality: self)
    }

    public func isSameExclusiveExecutionContext(other: AdapterExecutor) -> Bool { other === self }

    /// True when the caller runs on `queue`: lets `assumeIsolated` work from queue callbacks.
    public var isOnQueue: Bool { DispatchQueue.getSpecific(key: key) == ObjectIdentifier(self) }

    public func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    public func isIsolatingCurrentContext() -> Bool? { isOnQueue }
}

extension AdapterExecutor {
    /// The one place the stack claims an actor's isolation without the runtime's check: runs
    /// `operation` isolated to `actor`, whose executor must be this one, from code that runs
    /// on `queue` (a transport or timer callback) but is not isolated in the compiler's eyes.
    ///
    /// `assumeIsolated` proves the same fact through the runtime, which costs hundreds of
    /// nanoseconds per call from a plain dispatch block; this checks the queue identity (a
    /// thread-local read) and traps like `assumeIsolated` anywhere else. Sound because every
    /// job of an actor on this executor runs on `queue`, one at a time: being on the queue
    /// means no other job of the actor runs.
    ///
    ///     executor.runIsolated(host) { $0.handle(event) }
    @inlinable
    package func runIsolated<A: Actor, T>(_ actor: A, _ operation: (isolated A) -> T) -> T {
        precondition(isOnQueue, "entered an adapter actor off its queue")
        return withoutActuallyEscaping(operation) { op in
            unsafeBitCast(op, to: ((A) -> T).self)(actor)
        }
    }

    /// `runIsolated` for the per-packet entry: `operation` takes its argument instead of
    /// capturing it, and the check is dispatch's own queue assertion (an atomic load and a
    /// thread identity compare), cheaper per packet than the queue-specific lookup behind
    /// `isOnQueue`. `operation` is escaping so that it is cast as it is: a closure that
    /// captures nothing then costs no allocation, where `withoutActuallyEscaping` allocated a
    /// context for its conversion on every call. It must capture nothing.
    ///
    ///     let queued = executor.runIsolated(host, (handle, pdu)) { host, a in host.enqueue(a.1, on: a.0) }
    @inlinable
    package func runIsolated<A: Actor, Argument, T>(_ actor: A, _ argument: Argument, _ operation: @escaping (isolated A, Argument) -> T) -> T {
        dispatchPrecondition(condition: .onQueue(queue))
        return unsafeBitCast(operation, to: ((A, Argument) -> T).self)(actor, argument)
    }
}

extension Actor {
    /// Runs `operation` isolated to this actor from a callback that the transport or a timer
    /// runs on the adapter queue — the queue behind this actor's executor (see
    /// `AdapterExecutor.runIsolated`, which this calls).
    ///
    ///     transport.start(on: executor.queue) { event in host.enter(on: executor) { $0.handle(event) } }
    @inlinable
    package nonisolated func enter<T>(on executor: AdapterExecutor, _ operation: (isolated Self) -> T) -> T {
        executor.runIsolated(self, operation)
    }
}
