import BLECore

/// Tasks of a test that run on the adapter queue.
extension VirtualController {
    /// Starts `body` in a task whose code outside the stack's actors runs on the adapter
    /// queue, so that `settle()` and `advance(by:)` also cover its way into the stack. A plain
    /// `Task` starts on the global pool and may not have reached the stack when they return.
    ///
    ///     let send = vc.task { try await channel.send(sdu) }
    ///     await vc.settle() // the send is at the controller, or waiting in the stack
    package func task<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> Task<T, Never> {
        Task(executorPreference: AdapterTaskExecutor(adapterExecutor), operation: body)
    }

    /// `task(_:)` for a throwing `body`.
    package func task<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Task<T, any Error> {
        Task(executorPreference: AdapterTaskExecutor(adapterExecutor), operation: body)
    }
}
