/// A subcommand: its options, help text with examples, and what it runs.
struct CommandSpec: Sendable {
    var name: String
    var summary: String
    /// Usage lines without the leading "ble ".
    var usage: [String]
    var options: [OptionSpec]
    /// Paragraphs printed after the usage.
    var details: [String] = []
    /// Example command lines (without "$ "), each with an optional comment.
    var examples: [(command: String, comment: String)]
    var run: @Sendable (CommandContext) async throws -> Void

    /// The subcommand's own options followed by the global ones.
    var allOptions: [OptionSpec] { options + GlobalOptions.specs }

    var helpText: String {
        var lines: [String] = []
        lines.append("ble \(name) - \(summary)")
        lines.append("")
        lines.append("Usage:")
        for u in usage { lines.append("  ble \(u)") }
        for d in details {
            lines.append("")
            lines.append(d)
        }
        if !options.isEmpty {
            lines.append("")
            lines.append("Options:")
            lines += HelpFormatter.optionLines(options)
        }
        lines.append("")
        lines.append("Global options:")
        lines += HelpFormatter.optionLines(GlobalOptions.specs)
        lines.append("")
        lines.append("Examples:")
        for e in examples {
            lines.append("  $ \(e.command)")
            if !e.comment.isEmpty { lines.append("      \(e.comment)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

enum HelpFormatter {
    static func optionLines(_ options: [OptionSpec]) -> [String] {
        let width = min(32, (options.map(\.synopsis.count).max() ?? 0) + 2)
        return options.map { o in
            let s = o.synopsis
            let pad = s.count < width ? String(repeating: " ", count: width - s.count) : "  "
            return "  \(s)\(pad)\(o.help)"
        }
    }
}
