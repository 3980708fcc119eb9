import Foundation

/// Throwaway broker secrets made at test time in their own directory: a mosquitto password
/// file (`mosquitto_passwd`) and a CA with a server certificate for 127.0.0.1 (`openssl`).
///
///     let secrets = try await BrokerSecrets.make()
///     try await secrets.writePasswords(["hall": "secret"])
///     let tls = try await secrets.makeCertificates()
final class BrokerSecrets: Sendable {
    let directory: URL

    struct Certificates {
        /// The CA that signed the server certificate.
        let caFile: String
        /// A CA that signed nothing the broker has.
        let otherCAFile: String
        let serverCertFile: String
        let serverKeyFile: String
    }

    private init(directory: URL) { self.directory = directory }

    static func make() throws -> BrokerSecrets {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("broker-secrets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return BrokerSecrets(directory: dir)
    }

    var passwordFile: String { directory.appendingPathComponent("passwd").path }

    /// Writes the password file anew with these users (hashed by mosquitto_passwd), readable by
    /// the broker (mosquitto started as root reads it as its own user).
    func writePasswords(_ users: [String: String]) async throws {
        try? FileManager.default.removeItem(atPath: passwordFile)
        _ = FileManager.default.createFile(atPath: passwordFile, contents: Data())
        for (user, password) in users.sorted(by: { $0.key < $1.key }) {
            try await Self.run("mosquitto_passwd", ["-b", passwordFile, user, password])
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: passwordFile)
    }

    /// A CA, a server certificate it signed (subjectAltName IP 127.0.0.1) and an unrelated CA.
    func makeCertificates() async throws -> Certificates {
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        for ca in ["ca", "other"] {
            try await Self.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test \(ca) CA",
                                           "-keyout", path("\(ca).key"), "-out", path("\(ca).pem")])
        }
        try await Self.run("openssl", ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                                       "-keyout", path("server.key"), "-out", path("server.csr")])
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try await Self.run("openssl", ["x509", "-req", "-days", "2", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                                       "-CAcreateserial", "-extfile", path("server.ext"), "-out", path("server.pem")])
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path("server.key"))
        return Certificates(caFile: path("ca.pem"), otherCAFile: path("other.pem"), serverCertFile: path("server.pem"), serverKeyFile: path("server.key"))
    }

    /// Runs `tool` (from PATH or /usr/bin) and waits for it (bounded: 30 s); a failure names
    /// the tool, its status and what it wrote to stderr.
    static func run(_ tool: String, _ arguments: [String]) async throws {
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin"]
        guard let dir = dirs.first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/" + tool) }) else {
            throw Broker.Failure(description: "\(tool) not found on PATH; install it (mosquitto_passwd: 'apt-get install mosquitto', openssl: 'apt-get install openssl')")
        }
        let child = try Child(path: dir + "/" + tool, arguments)
        async let text = Child.read(child.stderr, timeout: .seconds(30)) { _ in false }
        let status = await child.waitForExit(timeout: .seconds(30))
        let stderr = await text
        guard status == 0 else {
            throw Broker.Failure(description: "\(tool) \(arguments.joined(separator: " ")) exited with \(status): \(stderr)")
        }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }
}
