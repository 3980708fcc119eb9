/// Why the virtual radio could not be started. Each message says what to do next.
public enum VirtualRadioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No Python interpreter with Bumble: neither `BLE_PYTHON` nor `<package>/.venv/bin/python`.
    case pythonNotFound(searched: [String])
    /// The scenario name or path does not name a file; `available` lists the bundled names.
    case scenarioNotFound(String, available: [String])
    /// The radio script is missing from the package.
    case scriptNotFound(path: String)
    /// The process could not be launched at all.
    case launchFailed(executable: String, detail: String)
    /// The process ended before printing its ready line.
    case exitedEarly(status: Int32, stderrTail: String)
    /// No ready line within the timeout; the process was stopped.
    case timedOut(after: Duration, stderrTail: String)
    /// The first stdout line was not the expected ready JSON.
    case badReadyLine(String, stderrTail: String)
    /// The task starting the radio was cancelled before it was ready; the process was stopped.
    case cancelled(stderrTail: String)

    public var description: String {
        switch self {
        case .pythonNotFound(let searched):
            return "no Python with Bumble found (looked at \(searched.joined(separator: ", "))); run `make venv` in the package root, or set BLE_PYTHON to a python that has bumble==0.0.236"
        case .scenarioNotFound(let name, let available):
            return "virtual radio scenario \"\(name)\" not found; use a path to a JSON file or one of: \(available.joined(separator: ", "))"
        case .scriptNotFound(let path):
            return "virtual radio script missing at \(path); the package checkout is incomplete"
        case .launchFailed(let executable, let detail):
            return "could not launch \(executable): \(detail); check BLE_PYTHON or run `make venv`"
        case .exitedEarly(let status, let tail):
            return "virtual radio exited with status \(status) before it was ready; its stderr ends with:\n\(tail)"
        case .timedOut(let after, let tail):
            return "virtual radio printed no ready line within \(after); it was stopped. Its stderr ends with:\n\(tail)"
        case .badReadyLine(let line, let tail):
            return "virtual radio printed an unexpected ready line \"\(line)\"; expected {\"ready\": true, \"port\": N, \"devices\": [...]}. Its stderr ends with:\n\(tail)"
        case .cancelled(let tail):
            return "starting the virtual radio was cancelled before it was ready; it was stopped. Its stderr ends with:\n\(tail)"
        }
    }
}
