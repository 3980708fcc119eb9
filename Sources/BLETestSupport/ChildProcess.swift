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
/// mosquitto started by root does. stdin is /dev/null or a file; stdout and stderr each go to
/// /dev/null, a file, or one pipe whose read end the caller owns.
///
///     let broker = try ChildProcess(path: "/usr/sbin/mosquitto", ["-c", conf], stderr: .pipe)
///     read(broker.pipe!, &buffer, buffer.count)
///     let status = await broker.exitStatus()
public struct ChildProcess: Sendable {
    /// Where one of the child's output streams goes.
    public enum Output: Sendable, Equatable {
        case null
        /// Created or truncated, mode 0644.
        case file(String)
        /// The write end of one pipe (shared when both streams ask for it); see `pipe`.
        case pipe
    }

    /// The child's process id; reap it with `waitpid` (or `stop()`).
    public let pid: pid_t
    /// The read end of the pipe when stdout or stderr is `.pipe`; the caller closes it.
    public let pipe: Int32?

    /// Starts `path` with `arguments` (argv[0] is `path`) and `environment` (nil: the
    /// environment of this process); `stdin` is a file to read from (nil: /dev/null).
    public init(
        path: String, _ arguments: [String], environment: [String: String]? = nil,
        stdin: String? = nil, stdout: Output = .null, stderr: Output = .null
    ) throws(ChildProcessError) {
        var fds: [Int32] = [-1, -1]
        let piped = stdout == .pipe || stderr == .pipe
        if piped {
            guard Glibc.pipe(&fds) == 0 else { throw ChildProcessError(path: path, operation: "pipe", code: errno) }
            // Close-on-exec, so that another child started meanwhile does not hold the write
            // end open (the reader would then not see the end of the output).
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        let (rc, child) = SpawnThread.shared.run { [fds] in
            Self.spawn(path: path, arguments, environment: environment, stdin: stdin, stdout: stdout, stderr: stderr, pipe: piped ? (read: fds[0], write: fds[1]) : nil)
        }
        if piped { close(fds[1]) }
        guard rc == 0 else {
            if piped { close(fds[0]) }
            throw ChildProcessError(path: path, operation: "posix_spawn", code: rc)
        }
        pid = child
        pipe = piped ? fds[0] : nil
    }

    /// The program that starts every child with a parent-death signal (PR_SET_PDEATHSIG,
    /// SIGKILL) before it executes the real one; nil where util-linux's setpriv is missing.
    public static let lifeline: String? = access("/usr/bin/setpriv", X_OK) == 0 ? "/usr/bin/setpriv" : nil

    /// posix_spawn of `path` through `lifeline`, on `SpawnThread`; its result and the pid.
    private static func spawn(
        path: String, _ arguments: [String], environment: [String: String]?,
        stdin: String?, stdout: Output, stderr: Output, pipe: (read: Int32, write: Int32)?
    ) -> (Int32, pid_t) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        for (fd, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
            switch output {
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            case .file(let file): posix_spawn_file_actions_addopen(&actions, fd, file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .pipe: if let pipe { posix_spawn_file_actions_adddup2(&actions, pipe.write, fd) }
            }
        }
        if let pipe {
            posix_spawn_file_actions_addclose(&actions, pipe.read)
            posix_spawn_file_actions_addclose(&actions, pipe.write)
        }
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
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
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

    /// The exit status (or 128 + the signal that ended it), once the child has ended; the
    /// wait blocks a thread of its own, never a task's. Reaps the child: call it once.
    public func exitStatus() async -> Int32 {
        let pid = self.pid
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Self.wait(pid)) }
        }
    }

    /// Sends SIGTERM and waits for the child to end; its exit status (or 128 + signal).
    @discardableResult
    public func stop() -> Int32 { Self.wait(pid, afterSending: SIGTERM) }

    /// Blocks until `pid` ends, after sending it `signal` if given; its exit status, or
    /// 128 + the signal that ended it.
    @discardableResult
    public static func wait(_ pid: pid_t, afterSending signal: Int32? = nil) -> Int32 {
        if let signal { kill(pid, signal) }
        // A pid that is not a child of ours (ECHILD) has nothing to wait for: status 0.
        return (try? FileDescriptorIO.waitForExit(pid)) ?? 0
    }
}

/// A child process could not be started.
public struct ChildProcessError: Error, Sendable, CustomStringConvertible {
    public let path: String
    /// "pipe" or "posix_spawn".
    public let operation: String
    public let code: Int32

    public var description: String {
        "cannot start \(path): \(operation) failed with errno \(code) (\(String(cString: strerror(code)))); check that it exists and is executable"
    }
}
