#if canImport(Glibc)
import Glibc
#endif
import BLETransport
import Foundation

/// A program started with posix_spawn and a clean signal state: nothing blocked, and SIGTERM,
/// SIGHUP, SIGINT and SIGPIPE at their default actions. A child started from a test or
/// benchmark thread otherwise inherits that thread's blocked signals, and SIGTERM would never
/// reach it. The child also ends with this process (SIGKILL as its parent-death signal, set by
/// util-linux's setpriv before it executes the program): a test run that crashes leaves no
/// gateway behind. The kernel clears that signal when a program changes its user, as
/// mosquitto started by root does. stdin is /dev/null, a file, a pipe the caller writes or a
/// new pseudo-terminal; stdout and stderr each go to /dev/null, a file, or one of two pipes
/// whose read ends the caller owns.
///
///     let broker = try ChildProcess(path: "/usr/sbin/mosquitto", ["-c", conf], stderr: .pipe)
///     read(broker.pipe!, &buffer, buffer.count)
///     let status = await broker.exitStatus(killingAfter: .seconds(30))
public struct ChildProcess: Sendable {
    /// Where the child's stdin comes from.
    public enum Input: Sendable, Equatable {
        case null
        /// Opened read-only.
        case file(String)
        /// The read end of a pipe whose write end is `input`; see `send(_:)`.
        case pipe
        /// A new pseudo-terminal, in line mode with echo as a person's terminal starts, as the
        /// child's controlling terminal: the child leads a session of its own, so Ctrl-C typed
        /// on the terminal reaches it as SIGINT. `input` is the terminal's master side: what
        /// is written there is typed, and `tcgetattr` on it reads the terminal's settings,
        /// also after the child ended.
        case terminal
    }

    /// Where one of the child's output streams goes.
    public enum Output: Sendable, Equatable {
        case null
        /// Created or truncated, mode 0644.
        case file(String)
        /// The write end of one pipe (shared when both streams ask for it); see `pipe`.
        case pipe
        /// The write end of another pipe, to read the two streams apart; see `secondPipe`.
        case secondPipe
    }

    /// The program, as given.
    public let path: String
    /// The child's process id; reap it with `exitStatus(killingAfter:)` or `stop()`.
    public let pid: pid_t
    /// The read end of the pipe when stdout or stderr is `.pipe`; the caller closes it.
    public let pipe: Int32?
    /// The read end of the pipe when stdout or stderr is `.secondPipe`; the caller closes it.
    public let secondPipe: Int32?
    /// The write end of stdin's pipe (`.pipe`) or the terminal's master side (`.terminal`),
    /// non-blocking; the caller closes it (a pipe's reader then sees the end of its input).
    public let input: Int32?
    /// The pseudo-terminal's name ("/dev/pts/3") when stdin is `.terminal`.
    public let terminalName: String?

    /// Starts `path` with `arguments` (argv[0] is `path`) and `environment` (nil: the
    /// environment of this process).
    ///
    /// - Throws: `ChildProcessError` naming the step (pipe, the pseudo-terminal's ioctls,
    ///   posix_spawn) and its errno; nothing is left open then.
    public init(
        path: String, _ arguments: [String], environment: [String: String]? = nil,
        stdin: Input = .null, stdout: Output = .null, stderr: Output = .null
    ) throws(ChildProcessError) {
        var opened = OpenedEnds()
        do throws(ChildProcessError) {
            let ends = try opened.make(stdin: stdin, outputs: [stdout, stderr], path: path)
            let (rc, child) = SpawnThread.shared.run {
                Self.spawn(path: path, arguments, environment: environment, stdin: stdin, stdout: stdout, stderr: stderr, ends: ends)
            }
            guard rc == 0 else { throw ChildProcessError(path: path, operation: "posix_spawn", code: rc) }
            opened.closeChildSides()
            self.path = path
            pid = child
            pipe = ends.pipe?.read
            secondPipe = ends.secondPipe?.read
            input = ends.input?.parent
            terminalName = ends.terminalName
        } catch {
            opened.closeAll()
            throw error
        }
    }

    /// The program that starts every child with a parent-death signal (PR_SET_PDEATHSIG,
    /// SIGKILL) before it executes the real one; nil where util-linux's setpriv is missing.
    public static let lifeline: String? = access("/usr/bin/setpriv", X_OK) == 0 ? "/usr/bin/setpriv" : nil

    /// glibc's POSIX_SPAWN_SETSID (spawn.h, a GNU extension the C importer does not show):
    /// the child calls setsid() before its file actions run.
    static let spawnSetSession: Int32 = 0x80

    /// posix_spawn of `path` through `lifeline`, on `SpawnThread`; its result and the pid.
    private static func spawn(
        path: String, _ arguments: [String], environment: [String: String]?,
        stdin: Input, stdout: Output, stderr: Output, ends: ChildEnds
    ) -> (Int32, pid_t) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch stdin {
        case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .file(let file): posix_spawn_file_actions_addopen(&actions, 0, file, O_RDONLY, 0)
        case .pipe: if let input = ends.input { posix_spawn_file_actions_adddup2(&actions, input.child, 0) }
        case .terminal:
            // Opened by name after setsid() and without O_NOCTTY: it becomes the session's
            // controlling terminal (the descriptor the parent holds would not).
            if let name = ends.terminalName { posix_spawn_file_actions_addopen(&actions, 0, name, O_RDWR, 0) }
        }
        for (fd, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
            switch output {
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            case .file(let file): posix_spawn_file_actions_addopen(&actions, fd, file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .pipe: if let pipe = ends.pipe { posix_spawn_file_actions_adddup2(&actions, pipe.write, fd) }
            case .secondPipe: if let pipe = ends.secondPipe { posix_spawn_file_actions_adddup2(&actions, pipe.write, fd) }
            }
        }
        // Every other end is close-on-exec, so nothing but fds 0-2 reaches the program.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGTERM, SIGHUP, SIGINT, SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        let session = stdin == .terminal ? spawnSetSession : 0
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | session))
        // A test run that dies (a crash, a watchdog's SIGKILL) takes its children with it: a
        // gateway left running would reopen the next run's pseudo-terminal of the same number.
        let program = lifeline ?? path
        let argv = ((lifeline.map { [$0, "--pdeathsig", "KILL", "--"] } ?? []) + [path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for e in envp ?? [] { free(e) } }
        var child: pid_t = 0
        let rc = if let envp {
            posix_spawn(&child, program, &actions, &attributes, argv, envp)
        } else {
            posix_spawn(&child, program, &actions, &attributes, argv, environ)
        }
        return (rc, child)
    }
}

/// A child process could not be started, or its stdin could not be written.
public struct ChildProcessError: Error, Sendable, CustomStringConvertible {
    public let path: String
    /// "pipe", "open /dev/ptmx", "unlock the pseudo-terminal", "posix_spawn" or "write to stdin".
    public let operation: String
    public let code: Int32

    public var description: String {
        let reason = "\(operation) failed with errno \(code) (\(String(cString: strerror(code))))"
        switch operation {
        case "write to stdin" where code == EAGAIN:
            return "\(path): \(reason): the child does not read its stdin, whose pipe is full"
        case "write to stdin":
            return "\(path): \(reason): the child has closed its stdin or ended"
        default:
            return "cannot start \(path): \(reason); check that it exists and is executable"
        }
    }
}
