/// Runs `body`, failing with a `CLIFailure` naming `what` when it takes longer than `limit`.
func withTimeout<T: Sendable>(_ limit: Duration, _ what: String,
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        guard let value = first else {
            let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
            throw CLIFailure("timed out after \(formatSeconds(seconds)) s \(what); check that the device is in range and advertising, or raise --timeout")
        }
        return value
    }
}

func formatSeconds(_ s: Double) -> String {
    s == s.rounded() ? String(Int(s)) : String(s)
}
