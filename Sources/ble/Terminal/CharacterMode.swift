#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// The terminal on stdin in character mode while a passkey is typed, so each key reaches the
/// tool as it is pressed (in line mode the terminal hands over a whole line at Enter, too late
/// for Pairing Keypress Notifications, Vol 3, Part H, 3.5.8).
///
/// Canonical mode and echo are off (non-canonical, VMIN 1): the tool echoes each digit and
/// erases it itself, since a terminal in non-canonical mode would print `^?` for a backspace
/// instead of erasing. ISIG stays on, so Ctrl-C still interrupts. The saved settings come back
/// with `restore()`; at exit, for the paths that end the process without unwinding (a second
/// Ctrl-C, the 5 s bound on cleaning up, a closed stdout); and on SIGTERM, SIGQUIT (Ctrl-\)
/// and SIGHUP, which end the process (status 128 + the signal) through that exit path.
///
///     guard let mode = CharacterMode.enter() else { return readLine() }
///     defer { mode.restore() }
struct CharacterMode: Sendable {
    /// What to put back: the terminal's settings and the signals' dispositions. Made, kept
    /// and put back inside `saved` only.
    private struct Saved {
        var settings: termios
        var signals: SignalWatch
    }

    /// One terminal in character mode at a time.
    private static let saved = Mutex<Saved?>(nil)
    /// Registers the exit hook once.
    private static let exitHook: Void = { atexit { CharacterMode.restoreSaved() } }()
    static let endingSignals = [SIGTERM, SIGQUIT, SIGHUP]

    /// The erase (backspace) and kill (Ctrl-U) characters of the terminal's settings.
    let erase: UInt8
    let kill: UInt8

    /// Switches stdin to character mode; nil when stdin is not a terminal or cannot be set.
    static func enter() -> CharacterMode? {
        guard isatty(0) == 1 else { return nil }
        var original = termios()
        guard tcgetattr(0, &original) == 0 else { return nil }
        _ = exitHook
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        let entered = saved.withLock { current -> Bool in
            guard current == nil, tcsetattr(0, TCSANOW, &raw) == 0 else { return false }
            current = Saved(settings: original, signals: SignalWatch(endingSignals))
            return true
        }
        guard entered else { return nil }
        let cc = withUnsafeBytes(of: original.c_cc) { Array($0) }
        return CharacterMode(erase: cc[Int(VERASE)], kill: cc[Int(VKILL)])
    }

    /// Puts the terminal's settings back as they were.
    func restore() { Self.restoreSaved() }

    private static func restoreSaved() {
        saved.withLock { current in
            guard var s = current else { return }
            current = nil
            _ = tcsetattr(0, TCSANOW, &s.settings)
            s.signals.stop()
        }
    }

    /// Signals that end the process, caught while the terminal is in character mode so that
    /// it ends through `exit` (and its hook) instead of at once.
    private final class SignalWatch {
        let sources: [any DispatchSourceSignal]
        let previous: [(Int32, __sighandler_t?)]

        init(_ signals: [Int32]) {
            previous = signals.map { ($0, signal($0, SIG_IGN)) }
            // A signal ignored already (nohup) stays ignored.
            let ignored = previous.filter { $0.1.map { unsafeBitCast($0, to: Int.self) } == unsafeBitCast(SIG_IGN, to: Int.self) }.map(\.0)
            sources = signals.filter { !ignored.contains($0) }.map { number in
                let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
                source.setEventHandler { exit(128 + number) }
                source.resume()
                return source
            }
        }

        func stop() {
            for source in sources { source.cancel() }
            for (number, handler) in previous { signal(number, handler) }
        }
    }
}
