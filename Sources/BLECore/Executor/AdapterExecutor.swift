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

/// An actor of an adapter: its `unownedExecutor` is `executor`'s (every conformer returns
/// `executor.asUnownedSerialExecutor()`), so code running on `executor.queue` runs where the
/// actor's jobs run.
///
///     actor Host: AdapterIsolated { nonisolated let executor: AdapterExecutor }
@usableFromInline package protocol AdapterIsolated: Actor {
    nonisolated var executor: AdapterExecutor { get }
}

extension AdapterIsolated {
    /// The one place the stack claims an actor's isolation itself, for the entries that run once
    /// per packet from code that runs on the adapter queue but is not isolated in the compiler's
    /// eyes (the transport's read callback, a channel's handler). Everything else enters an actor
    /// with the language's `assumeIsolated`.
    ///
    /// Proof: the check is dispatch's queue assertion on this actor's own `executor.queue` (an
    /// atomic load and a thread identity compare); every job of the actor runs on that queue, one
    /// at a time, so passing it means no other job of the actor runs. `assumeIsolated` proves the
    /// same through the runtime, at 150-220 ns from a plain dispatch block against 55 ns here.
    /// `operation` takes its argument instead of capturing it and is escaping, so that it is cast
    /// as it is: a closure that captures nothing costs no allocation. It must capture nothing.
    ///
    ///     let queued = host.runIsolated((handle, pdu)) { host, a in host.enqueue(a.1, on: a.0) }
    @inlinable
    package nonisolated func runIsolated<Argument, T>(_ argument: Argument, _ operation: @escaping (isolated Self, Argument) -> T) -> T {
        dispatchPrecondition(condition: .onQueue(executor.queue))
        return unsafeBitCast(operation, to: ((Self, Argument) -> T).self)(self, argument)
    }
}
