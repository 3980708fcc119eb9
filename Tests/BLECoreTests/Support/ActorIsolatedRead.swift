extension Actor {
    /// Runs `body` isolated to this actor, on its executor: how a test reads state confined
    /// to the adapter queue (a `Waiters`' count) without touching it from the test's thread.
    ///
    ///     #expect(await central.isolated { $0.connectTurns.isEmpty })
    func isolated<T: Sendable>(_ body: @Sendable (isolated Self) -> T) -> T { body(self) }
}
