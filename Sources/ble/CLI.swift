import BLECore
import Glibc
import BLEWire

/// The `ble` tool: global options, subcommand dispatch, exit status.
enum CLI {
    static let version = SwiftBLEHost.version

    enum ExitCode {
        static let success: Int32 = 0
        static let failure: Int32 = 1
        static let usage: Int32 = 2
        static let interrupted: Int32 = 130
    }

    static let commands: [CommandSpec] = [
        AdaptersCommand.spec, InfoCommand.spec, ScanCommand.spec, ConnectCommand.spec,
        InspectCommand.spec, ReadCommand.spec, WriteCommand.spec, DecodeCommand.spec,
        PairCommand.spec, BondsCommand.spec, L2CAPCommand.spec, RunGatewayCommand.spec, MonitorCommand.spec,
        AdvCommand.spec,
        AdvertiseCommand.spec,
        ServeCommand.spec,
    ]

    static var topHelp: String {
        var lines = [
            "ble - Bluetooth Low Energy from the command line, talking HCI directly (no BlueZ daemon)",
            "",
            "Usage:",
            "  ble [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGUMENTS]",
            "  ble COMMAND --help",
            "",
            "Commands:",
        ]
        let width = (commands.map(\.name.count).max() ?? 0) + 2
        for c in commands {
            lines.append("  \(c.name)\(String(repeating: " ", count: width - c.name.count))\(c.summary)")
        }
        lines += ["", "Global options:"]
        lines += HelpFormatter.optionLines(GlobalOptions.specs + [.flag("version", nil, "print the version")])
        lines += [
            "",
            "Examples:",
            "  $ ble info",
            "  $ ble -d tcp:127.0.0.1:9000 scan --duration 5",
            "  $ ble scan --json --service 180D | jq .name",
            "  $ ble inspect F0:5E:B1:00:00:01 --read",
            "  $ ble read \"Heart\" -c 2A37 --notify --count 10",
            "  $ ble decode session.btsnoop",
            "",
            "Data goes to stdout, status to stderr. Exit status: 0 success, 1 failure, 2 usage error, 130 interrupted.",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses the command line and finds the subcommand. Returns the context, or an exit
    /// status when nothing is left to run (help, version, usage error).
    static func prepare(_ arguments: [String], environment: [String: String], console: Console) -> Result<CommandContext, ExitStatus> {
        do throws(UsageError) {
            let top = ArgumentParser(options: GlobalOptions.specs + [.flag("version", nil, "")], stopAtFirstPositional: true, commandName: "ble")
            let (before, rest) = try top.parse(arguments)
            if before.has("version") {
                console.out("ble \(version)")
                return .failure(ExitStatus(code: ExitCode.success))
            }
            guard let name = before.positionals.first else {
                if before.has("help") {
                    console.raw(topHelp)
                    return .failure(ExitStatus(code: ExitCode.success))
                }
                console.error("no command given; try 'ble scan', 'ble info' or 'ble --help'")
                return .failure(ExitStatus(code: ExitCode.usage))
            }
            if name == "help" {
                if let sub = rest.first, let c = commands.first(where: { $0.name == sub }) {
                    console.raw(c.helpText)
                } else {
                    console.raw(topHelp)
                }
                return .failure(ExitStatus(code: ExitCode.success))
            }
            guard let spec = commands.first(where: { $0.name == name }) else {
                let names = commands.map(\.name).joined(separator: ", ")
                throw UsageError("unknown command \"\(name)\"; commands: \(names) (see 'ble --help')")
            }
            let parser = ArgumentParser(options: spec.allOptions, commandName: "ble \(spec.name)")
            var (args, _) = try parser.parse(rest)
            if args.has("help") || before.has("help") {
                console.raw(spec.helpText)
                return .failure(ExitStatus(code: ExitCode.success))
            }
            var merged = before
            merged.positionals = []
            merged.merge(args)
            args = merged
            let globals = try GlobalOptions(args, environment: environment)
            return .success(CommandContext(spec: spec, args: args, globals: globals, console: console, environment: environment))
        } catch {
            console.error(error.message)
            return .failure(ExitStatus(code: ExitCode.usage))
        }
    }

    /// Runs a prepared command and maps its outcome to an exit status.
    static func run(_ context: CommandContext, interrupted: @Sendable () -> Bool) async -> Int32 {
        do {
            try await context.spec.run(context)
            return interrupted() ? ExitCode.interrupted : ExitCode.success
        } catch {
            if interrupted() { return ExitCode.interrupted }
            return report(error, console: context.console)
        }
    }

    static func report(_ error: any Error, console: Console) -> Int32 {
        switch error {
        case let usage as UsageError:
            console.error(usage.message)
            return ExitCode.usage
        case let error as any BLEError where error.isCancellation:
            return ExitCode.interrupted
        default:
            console.error(oneLine("\(error)"))
            return ExitCode.failure
        }
    }

    /// Error texts are printed on one line.
    static func oneLine(_ s: String) -> String {
        s.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}

/// An exit status as an Error, so `prepare` can return it in a Result.
struct ExitStatus: Error { var code: Int32 }
