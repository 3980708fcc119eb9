import Glibc

/// Runs `body` on a new detached POSIX thread, for work that blocks (a read of standard input,
/// libmosquitto's network loop) and must never hold a thread of the cooperative pool. Returns
/// pthread_create's error number: 0 when the thread runs, EAGAIN at the process's thread limit.
///
///     let err = DetachedThread.start { blockingLoop() }
package enum DetachedThread {
    package static func start(_ body: @escaping @Sendable () -> Void) -> Int32 {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let err = pthread_create(&thread, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard err == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return err
        }
        pthread_detach(thread)
        return 0
    }

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
