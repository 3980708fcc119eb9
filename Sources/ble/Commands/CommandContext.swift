import BLECore
import BLETransport

/// Everything a subcommand needs: its parsed arguments, the global options, the console.
struct CommandContext: Sendable {
    var spec: CommandSpec
    var args: ParsedArguments
    var globals: GlobalOptions
    var console: Console
    var environment: [String: String]

    /// The CLI opts in to the library's log lines: "ble[level]: ..." on the console's
    /// status stream (stderr), at the level of -v or `$BLE_LOG` (warnings by default).
    var logger: BLELogger {
        let console = self.console
        return BLELogger(label: "ble", minimumLevel: globals.logLevel) { record in
            console.status(record.formatted)
        }
    }

    /// `logger` without the host's error line for a lost transport: a command that reopens
    /// the adapter reports the loss, with its reason, in a line of its own (`AdapterReopen`).
    var reopeningLogger: BLELogger {
        let console = self.console
        return BLELogger(label: "ble", minimumLevel: globals.logLevel) { record in
            if record.metadata["event"] == "transportLost" { return }
            console.status(record.formatted)
        }
    }

    /// Exactly `count` positional arguments named by `names`, or a usage error.
    func positionals(_ names: [String]) throws(UsageError) -> [String] {
        guard args.positionals.count == names.count else {
            if args.positionals.count < names.count {
                throw UsageError("'ble \(spec.name)' needs \(names[args.positionals.count]); usage: ble \(spec.usage[0])")
            }
            throw UsageError("'ble \(spec.name)' takes \(names.isEmpty ? "no arguments" : names.joined(separator: " ")) but got \"\(args.positionals[names.count])\" too; usage: ble \(spec.usage[0])")
        }
        return args.positionals
    }
}

/// A runtime failure: exit status 1, one line that says what to do.
struct CLIFailure: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
