import BLECore

/// What the commands that run until Ctrl-C (`scan`, `connect`, `read --notify/--indicate`) do
/// when the adapter goes away under them (a USB dongle unplugged, the kernel's adapter
/// removed, the H4 link dropped, a Hardware Error): one line on stderr, `Central.reopen` with
/// its backoff (an attempt at once when the kernel registers an hci adapter again), one line
/// when it is back, and the command starts over on it: scanning again, connecting and
/// subscribing again. On by default for those commands; `--no-reopen` makes them fail at once
/// with the loss's typed error, as the one-shot commands (`read`, `write`, `inspect`, `pair`,
/// `l2cap`) always do.
///
///     try await withCentral(ctx, reopenable: AdapterReopen.isOn(ctx)) { central in
///         try await AdapterReopen.resuming(ctx, central: central, "scanning again") { resumed in ... }
///     }
enum AdapterReopen {
    static let option = OptionSpec.flag("no-reopen", nil, "fail when the adapter goes away, instead of reopening it and resuming")
    static let details = ["When the adapter goes away (unplugged, removed, the H4 link dropped) the command says so on stderr, reopens it (with a backoff, at once when an hci adapter comes back) and resumes; --no-reopen fails instead (exit status 1)."]

    /// The attempts: 250 ms doubling to 10 s, and at once when the kernel registers an hci
    /// adapter of the same index again.
    static let policy = AdapterReopenPolicy()

    static func isOn(_ ctx: CommandContext) -> Bool { !ctx.args.has("no-reopen") }

    /// Runs `body` (with `resumed` false the first time); when it ends, by returning or
    /// throwing, because the adapter was lost, reopens the adapter and runs it again with
    /// `resumed` true, saying `resuming` on stderr. Otherwise returns or throws as `body` did.
    static func resuming<T: Sendable>(_ ctx: CommandContext, central: Central, _ resuming: String,
                                      _ body: (_ resumed: Bool) async throws -> T) async throws -> T {
        var resumed = false
        while true {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body(resumed)) } catch { outcome = .failure(error) }
            guard !Task.isCancelled, let reason = await loss(central) else { return try outcome.get() }
            guard isOn(ctx) else {
                if case .failure(let error) = outcome { throw error }
                throw CLIFailure("adapter \(ctx.globals.device) lost: \(reason)")
            }
            ctx.console.status("adapter \(ctx.globals.device) lost: \(reason); reopening it (Ctrl-C to stop)")
            let info = try await reopen(ctx, central: central)
            ctx.console.status("adapter \(ctx.globals.device) reopened (\(info.address)); \(resuming)")
            resumed = true
        }
    }

    /// Runs `body` until it ends or the controller reports a Hardware Error, whichever comes
    /// first (then `body` is cancelled). For a scan: its stream ends with an error when the
    /// transport is lost, but waits through a Hardware Error, since the central resumes it
    /// after the next `powerOn()`; links end on both.
    static func untilHardwareError(_ central: Central, _ body: @escaping @Sendable () async throws -> Void) async throws {
        enum Outcome: Sendable { case ended, hardwareError, unwatched }
        try await withThrowingTaskGroup(of: Outcome.self) { group in
            group.addTask {
                try await body()
                return .ended
            }
            group.addTask {
                // The state stream replays the current state first; resetting comes only
                // from a Hardware Error once powered on.
                for await state in await central.stateEvents() where state == .resetting { return .hardwareError }
                return .unwatched
            }
            defer { group.cancelAll() }
            while let outcome = try await group.next() {
                if outcome != .unwatched { return }
            }
        }
    }

    /// Why the adapter is down after having been up: the transport lost, or the controller
    /// resetting after a Hardware Error. Nil while it is up or after `close()`.
    static func loss(_ central: Central) async -> String? {
        let snapshot = await central.snapshot
        switch snapshot.state {
        case .transportLost: return snapshot.reason ?? "the transport was lost"
        case .resetting: return snapshot.reason ?? "the controller is resetting"
        default: return nil
        }
    }

    /// `Central.reopen` with each failed attempt logged (seen with -v).
    static func reopen(_ ctx: CommandContext, central: Central) async throws -> ControllerInfo {
        let events = await central.reopenEvents()
        let logger = ctx.logger
        let log = Task {
            for await event in events { logger.log(.info, "adapter \(ctx.globals.device): \(event)") }
        }
        defer { log.cancel() }
        return try await central.reopen(policy)
    }
}
