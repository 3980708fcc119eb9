/// One option a command accepts: `--long`, optionally `-s`, a flag or taking a value.
struct OptionSpec: Sendable {
    enum Kind: Sendable {
        /// Present or not; repeating counts (`-vvv`).
        case flag
        /// Takes a value (`-d X`, `-dX`, `--device X`, `--device=X`); repeating collects them.
        case value(placeholder: String)
    }

    var long: String
    var short: Character?
    var kind: Kind
    var help: String

    static func flag(_ long: String, _ short: Character? = nil, _ help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .flag, help: help)
    }

    static func value(_ long: String, _ short: Character? = nil, _ placeholder: String, _ help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .value(placeholder: placeholder), help: help)
    }

    var takesValue: Bool {
        if case .value = kind { return true }
        return false
    }

    /// "-d, --device SPEC" for help texts.
    var synopsis: String {
        var s = short.map { "-\($0), " } ?? "    "
        s += "--\(long)"
        if case .value(let placeholder) = kind { s += " \(placeholder)" }
        return s
    }
}

/// A usage mistake: exit status 2, one line that says what to do.
struct UsageError: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
