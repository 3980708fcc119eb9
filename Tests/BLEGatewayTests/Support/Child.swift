import Foundation

/// A child process started with posix_spawn and a clean signal state: no blocked signals and
/// default actions for SIGTERM, SIGHUP and SIGINT. (A child started from a test thread
/// otherwise inherits that thread's blocked signals, and SIGTERM would never reach it.)
/// Its stderr comes back as a stream of text; stdout goes to /dev/null.
///
///     let child = try Child(path: "/usr/sbin/mosquitto", ["-p", "1883"])
///     for await text in child.stderr { ... }
final class Child: Sendable {
    let pid: pid_t
    /// Text the child writes to stderr, as it arrives.
    let stderr: AsyncStream<String>
    /// The exit status (or 128 + signal), once.
    let exit: AsyncStream<Int32>
    /// Kept for the child's lifetime: releasing it closes the pipe.
    private let reader: FileHandle

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(path: String, _ arguments: [String]) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw Failure(description: "pipe: errno \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addclose(&actions, fds[1])
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
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, &attributes, argv, environ)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw Failure(description: "cannot start \(path): \(String(cString: strerror(rc)))")
        }
        pid = child
        let spawned = child
        let (text, feed) = AsyncStream<String>.makeStream()
        stderr = text
        reader = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
        reader.readabilityHandler = { h in
            let d = h.availableData
            if d.isEmpty { feed.finish(); h.readabilityHandler = nil } else { feed.yield(String(decoding: d, as: UTF8.self)) }
        }
        let (exits, exited) = AsyncStream<Int32>.makeStream()
        exit = exits
        // waitpid blocks: it gets a thread of its own, which ends with the child.
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(spawned, &status, 0) < 0 && errno == EINTR {}
            let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            exited.yield(code)
            exited.finish()
        }
    }

    func signal(_ s: Int32) { _ = kill(pid, s) }

    /// Waits for the exit status, sending SIGKILL after `timeout`.
    func waitForExit(timeout: Duration) async -> Int32 {
        let pid = self.pid
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            kill(pid, SIGKILL)
        }
        var code: Int32 = -1
        for await c in exit { code = c }
        watchdog.cancel()
        return code
    }

    /// Collects stderr until `done` says the text so far is enough, or `timeout` passes.
    static func read(_ stream: AsyncStream<String>, timeout: Duration, until done: @escaping @Sendable (String) -> Bool) async -> String {
        await withTaskGroup(of: String?.self) { group in
            group.addTask {
                var text = ""
                for await chunk in stream {
                    text += chunk
                    if done(text) { return text }
                }
                return text
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? ""
        }
    }
}
