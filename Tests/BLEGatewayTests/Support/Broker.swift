import Foundation
import Testing

/// A real mosquitto on a free local port, started for one test and stopped after it. With
/// persistence on, a restart keeps the sessions and queued QoS 1 messages of clients that
/// connected without a clean session (the watcher).
///
///     let broker = try await Broker.start()
///     defer { broker.stop() }
final class Broker: @unchecked Sendable { // `process` is replaced only by restart(), called from the test's own task
    let port: Int
    let directory: URL
    private var process: Child?

    var url: String { "mqtt://127.0.0.1:\(port)" }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// mosquitto from PATH, /usr/sbin or /usr/local/sbin (Debian puts it in /usr/sbin, not on a
    /// normal user's PATH). `make test` installs it (APT_PACKAGES).
    static func executable() throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/sbin"]
        for d in dirs where FileManager.default.isExecutableFile(atPath: d + "/mosquitto") {
            return URL(fileURLWithPath: d + "/mosquitto")
        }
        throw Failure(description: "mosquitto not found on PATH or in /usr/sbin; install it with 'apt-get install mosquitto mosquitto-clients' (make deps does)")
    }

    /// A port nobody listens on now (bound once by the kernel's choice, then released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard bound == 0 else { throw Failure(description: "bind: errno \(errno)") }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    private init(port: Int, directory: URL) {
        self.port = port
        self.directory = directory
    }

    /// On `port` (a free one when nil), with `settings` for its listener (anonymous clients
    /// by default; a password file or TLS files instead).
    static func start(port: Int? = nil, settings: String = "allow_anonymous true") async throws -> Broker {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mosquitto-\(UUID().uuidString)")
        // World-writable: mosquitto started as root switches to its own user before writing.
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        let broker = Broker(port: try port ?? freePort(), directory: dir)
        try broker.configure(settings)
        try await broker.launch()
        return broker
    }

    /// Writes mosquitto.conf: the listener on `port`, then `settings`.
    private func configure(_ settings: String) throws {
        let dir = directory
        let conf = """
            listener \(port) 127.0.0.1
            \(settings)
            persistence true
            persistence_location \(dir.path)/
            autosave_interval 0
            log_dest stderr
            log_type error
            log_type warning
            log_type notice
            log_type information

            """
        try conf.write(to: dir.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
    }

    /// Starts mosquitto and returns once it says it is running (bounded: 10 s).
    func launch() async throws {
        let child = try Child(path: try Self.executable().path, ["-c", directory.appendingPathComponent("mosquitto.conf").path])
        process = child
        let text = await Child.read(child.stderr, timeout: .seconds(10)) { $0.contains(" running") }
        if !text.contains(" running") {
            stop()
            throw Failure(description: "mosquitto on port \(port) did not report running within 10 s: \(text)")
        }
    }

    /// SIGTERM (mosquitto saves its persistence file), then waits for the exit (SIGKILL after 5 s).
    func stop() {
        guard let p = process else { return }
        process = nil
        p.signal(SIGTERM)
        var status: Int32 = 0
        while waitpid(p.pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// What mosquitto logged since the last call (or since it said it was running), collected
    /// until `done` says the text is enough or `timeout` passes.
    func log(timeout: Duration, until done: @escaping @Sendable (String) -> Bool) async -> String {
        guard let p = process else { return "" }
        return await Child.read(p.stderr, timeout: timeout, until: done)
    }

    /// Sends `s` to mosquitto (SIGSTOP freezes it with its connections open: nothing is
    /// acknowledged until SIGCONT).
    func signal(_ s: Int32) { process?.signal(s) }

    /// Stops and starts again on the same port and persistence file (with new `settings`
    /// when given).
    func restart(settings: String? = nil) async throws {
        stop()
        if let settings { try configure(settings) }
        try await launch()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
