/// What a command line said: option values by long name, flag counts, positional arguments.
struct ParsedArguments: Sendable {
    var values: [String: [String]] = [:]
    var flags: [String: Int] = [:]
    var positionals: [String] = []

    func has(_ long: String) -> Bool { (flags[long] ?? 0) > 0 }
    func count(_ long: String) -> Int { flags[long] ?? 0 }
    /// The last value given for `long` (a later option overrides an earlier one).
    func value(_ long: String) -> String? { values[long]?.last }
    func all(_ long: String) -> [String] { values[long] ?? [] }

    mutating func merge(_ other: ParsedArguments) {
        for (k, v) in other.values { values[k, default: []] += v }
        for (k, n) in other.flags { flags[k, default: 0] += n }
        positionals += other.positionals
    }
}

/// GNU-style option parsing: `-d X`, `-dX`, clustered short flags (`-vv`), `--device X`,
/// `--device=X`, unambiguous prefixes of long options (`--dev X`), and `--` ending the options.
/// Options and positional arguments may be mixed.
struct ArgumentParser {
    var options: [OptionSpec]
    /// Stop at the first positional argument and leave the rest unparsed (for the global
    /// options before the subcommand name).
    var stopAtFirstPositional = false
    /// Used in error messages: "ble scan".
    var commandName: String

    /// Parses `arguments`; returns the result and, with `stopAtFirstPositional`, the
    /// arguments after the first positional one.
    func parse(_ arguments: [String]) throws(UsageError) -> (ParsedArguments, rest: [String]) {
        var result = ParsedArguments()
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if arg == "--" {
                result.positionals += arguments[i...]
                return (result, [])
            }
            if arg.hasPrefix("--") {
                let body = arg.dropFirst(2)
                let name: Substring
                var inline: String?
                if let eq = body.firstIndex(of: "=") {
                    name = body[..<eq]
                    inline = String(body[body.index(after: eq)...])
                } else {
                    name = body
                }
                let spec = try longOption(String(name))
                if spec.takesValue {
                    if let inline {
                        result.values[spec.long, default: []].append(inline)
                    } else {
                        guard i < arguments.count else { throw missingValue(spec, as: "--\(spec.long)") }
                        result.values[spec.long, default: []].append(arguments[i])
                        i += 1
                    }
                } else {
                    if inline != nil {
                        throw UsageError("option --\(spec.long) takes no value; write it alone (see '\(commandName) --help')")
                    }
                    result.flags[spec.long, default: 0] += 1
                }
                continue
            }
            if arg.hasPrefix("-") && arg.count > 1 {
                var chars = arg.dropFirst()
                while let c = chars.first {
                    chars = chars.dropFirst()
                    guard let spec = options.first(where: { $0.short == c }) else {
                        throw UsageError("unknown option -\(c) for '\(commandName)'; see '\(commandName) --help'")
                    }
                    if spec.takesValue {
                        if !chars.isEmpty {
                            result.values[spec.long, default: []].append(String(chars))
                        } else {
                            guard i < arguments.count else { throw missingValue(spec, as: "-\(c)") }
                            result.values[spec.long, default: []].append(arguments[i])
                            i += 1
                        }
                        break
                    }
                    result.flags[spec.long, default: 0] += 1
                }
                continue
            }
            if stopAtFirstPositional {
                result.positionals.append(arg)
                return (result, Array(arguments[i...]))
            }
            result.positionals.append(arg)
        }
        return (result, [])
    }

    private func longOption(_ name: String) throws(UsageError) -> OptionSpec {
        if let exact = options.first(where: { $0.long == name }) { return exact }
        let candidates = options.filter { !name.isEmpty && $0.long.hasPrefix(name) }
        if candidates.count == 1 { return candidates[0] }
        if candidates.count > 1 {
            let list = candidates.map { "--\($0.long)" }.joined(separator: ", ")
            throw UsageError("option --\(name) is ambiguous (\(list)); spell it out (see '\(commandName) --help')")
        }
        throw UsageError("unknown option --\(name) for '\(commandName)'; see '\(commandName) --help'")
    }

    private func missingValue(_ spec: OptionSpec, as written: String) -> UsageError {
        let placeholder: String
        if case .value(let p) = spec.kind { placeholder = p } else { placeholder = "VALUE" }
        return UsageError("option \(written) needs a value: \(written) \(placeholder) (see '\(commandName) --help')")
    }
}
