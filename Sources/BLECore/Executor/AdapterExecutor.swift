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

extension Actor {
    /// Runs `operation` isolated to this actor from a callback that the transport or a timer
    /// runs on the adapter queue — the queue behind this actor's executor.
    ///
    /// `assumeIsolated` checks the same fact through the runtime, which costs hundreds of
    /// nanoseconds per call from a plain dispatch block; this is the per-packet entry, so it
    /// checks the queue identity instead (a thread-local read), and traps like
    /// `assumeIsolated` if called anywhere else.
    ///
    ///     transport.start(on: executor.queue) { event in host.enter(on: executor) { $0.handle(event) } }
    @inlinable
    public nonisolated func enter<T>(on executor: AdapterExecutor, _ operation: (isolated Self) -> T) -> T {
        precondition(executor.isOnQueue, "entered an adapter actor off its queue")
        return withoutActuallyEscaping(operation) { op in
            unsafeBitCast(op, to: ((Self) -> T).self)(self)
        }
    }
}
