import Dispatch

/// State that one serial queue owns: the one place the host tells the compiler "trust this queue".
///
/// The host's shared classes (channels, transports, stream buffers, test doubles) keep their
/// mutable state in a `QueueConfined` and hold it in a `let`, so the class itself is `Sendable`
/// without `@unchecked`. Every read and write goes through ``value``, which in debug builds checks
/// that the caller runs on ``queue`` or on a queue that targets it (`dispatchPrecondition`);
/// release builds skip the check, and the accessors inline, so the data path pays nothing for it.
///
/// `@usableFromInline` on the class is what lets the accessors inline into other modules: the
/// members of a `package` type that is not `@usableFromInline` keep their bodies to themselves,
/// `@inlinable` or not, and every access from another module then calls the generic accessor
/// with the type's metadata looked up at run time (`swift_getGenericMetadata`; Swift 6.3).
///
///     let state = QueueConfined(State(), on: executor.queue)
///     executor.queue.async { state.value.count += 1 }
@usableFromInline package final class QueueConfined<Value>: @unchecked Sendable { // `storage` is reached only through `value`, which checks `queue` in debug builds: the proof for every type built on it
    /// The serial queue that owns the value.
    @usableFromInline package let queue: DispatchQueue
    // Release builds skip the dynamic exclusivity checks too: the value has one owner queue,
    // and per-packet state (the ACL inlet, stream buffers) paid for them; debug builds keep them.
    #if DEBUG
    @usableFromInline var storage: Value
    #else
    @usableFromInline @exclusivity(unchecked) var storage: Value
    #endif

    /// Confines `value` to `queue`.
    package init(_ value: Value, on queue: DispatchQueue) {
        self.storage = value
        self.queue = queue
    }

    /// The confined value; read or modify it only on ``queue``.
    @inlinable package var value: Value {
        _read {
            assertOnQueue()
            yield storage
        }
        _modify {
            assertOnQueue()
            yield &storage
        }
    }

    @inlinable @inline(__always)
    func assertOnQueue() {
        #if DEBUG
        dispatchPrecondition(condition: .onQueue(queue))
        #endif
    }
}
