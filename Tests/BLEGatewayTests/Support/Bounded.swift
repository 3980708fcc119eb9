/// What `body` returns, or nil when `timeout` passes first (then `body`'s task is cancelled).
///
///     let event = try await bounded(.seconds(10)) { for await e in client.events { return e }; return nil }
func bounded<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T?) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask(operation: body)
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
