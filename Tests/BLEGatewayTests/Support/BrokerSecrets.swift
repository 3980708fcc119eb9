import Foundation

/// Throwaway broker secrets made at test time in their own directory: a mosquitto password
/// file (`mosquitto_passwd`) and two CAs with a server certificate for 127.0.0.1 each and a
/// client certificate (`openssl`).
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
        /// A server certificate for 127.0.0.1 signed by the other CA.
        let otherServerCertFile: String
        let otherServerKeyFile: String
        /// A client certificate (CN "gateway") signed by the CA.
        let clientCertFile: String
        let clientKeyFile: String
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

    /// Two CAs ("ca", "other"), a server certificate for 127.0.0.1 (subjectAltName IP) from
    /// each, and a client certificate from "ca". EC P-256 keys: quick to make.
    func makeCertificates() async throws -> Certificates {
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for ca in ["ca", "other"] {
            try await Self.run("openssl", ["req", "-x509"] + key + ["-days", "2", "-subj", "/CN=test \(ca) CA",
                                           "-keyout", path("\(ca).key"), "-out", path("\(ca).pem")])
        }
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try "extendedKeyUsage=clientAuth\n".write(toFile: path("client.ext"), atomically: true, encoding: .utf8)
        for (name, ca, subject) in [("server", "ca", "127.0.0.1"), ("other-server", "other", "127.0.0.1"), ("client", "ca", "gateway")] {
            try await Self.run("openssl", ["req"] + key + ["-subj", "/CN=\(subject)", "-keyout", path("\(name).key"), "-out", path("\(name).csr")])
            try await Self.run("openssl", ["x509", "-req", "-days", "2", "-in", path("\(name).csr"), "-CA", path("\(ca).pem"), "-CAkey", path("\(ca).key"),
                                           "-CAcreateserial", "-extfile", path(name == "client" ? "client.ext" : "server.ext"), "-out", path("\(name).pem")])
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path("\(name).key"))
        }
        return Certificates(caFile: path("ca.pem"), otherCAFile: path("other.pem"), serverCertFile: path("server.pem"), serverKeyFile: path("server.key"),
                            otherServerCertFile: path("other-server.pem"), otherServerKeyFile: path("other-server.key"),
                            clientCertFile: path("client.pem"), clientKeyFile: path("client.key"))
    }

    /// Runs `tool` (from PATH or /usr/bin) and waits for it (bounded: 30 s); a failure names
    /// the tool, its status and what it wrote to stderr.
    static func run(_ tool: String, _ arguments: [String]) async throws {
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin"]
        guard let dir = dirs.first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/" + tool) }) else {
            throw Broker.Failure(description: "\(tool) not found on PATH; install it (mosquitto_passwd: 'apt-get install mosquitto', openssl: 'apt-get install openssl')")
        }
        let child = try Child(path: dir + "/" + tool, arguments)
        let status = await child.waitForExit(timeout: .seconds(30))
        guard status == 0 else {
            // What it wrote is in the pipe already; the end of the pipe can come much later (a
            // process started meanwhile by another test may hold its write end), so read only
            // up to the last complete line.
            let stderr = await Child.read(child.stderr, timeout: .seconds(2)) { $0.hasSuffix("\n") }
            throw Broker.Failure(description: "\(tool) \(arguments.joined(separator: " ")) exited with \(status): \(stderr)")
        }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }
}
