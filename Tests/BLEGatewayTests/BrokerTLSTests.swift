import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import Testing

/// The gateway's connection to a real mosquitto over TLS, with certificates made for each test
/// (`BrokerSecrets.makeCertificates`). The broker has a plain listener for the test's watcher
/// and a TLS listener for the gateway; every wait is bounded.
@Suite(.serialized) struct BrokerTLSTests {
    /// mosquitto.conf lines for a TLS listener on `port` serving `cert`/`key`; with
    /// `clientCertificates`, a client must show a certificate from the CA.
    static func tlsListener(_ port: Int, _ certs: BrokerSecrets.Certificates, cert: String, key: String, clientCertificates: Bool) -> String {
        """
        listener \(port) 127.0.0.1
        cafile \(certs.caFile)
        certfile \(cert)
        keyfile \(key)
        require_certificate \(clientCertificates)
        """
    }

    @Test func caClientCertificateAndPasswordOverTLS() async throws {
        let secrets = try BrokerSecrets.make()
        let certs = try await secrets.makeCertificates()
        try await secrets.writePasswords(["hall": "secret", "watcher": "w"])
        let tlsPort = try Broker.freePort()
        let broker = try await Broker.start(settings: "allow_anonymous false\npassword_file \(secrets.passwordFile)\n"
            + Self.tlsListener(tlsPort, certs, cert: certs.serverCertFile, key: certs.serverKeyFile, clientCertificates: true))
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#") { $0.username = "watcher"; $0.password = "w" }
        let bed = try await GatewayBed(broker: broker, peripherals: [BrokerConnectionTests.tag]) { c in
            c.broker.url = "mqtts://127.0.0.1:\(tlsPort)"
            c.broker.caFile = certs.caFile
            c.broker.certFile = certs.clientCertFile
            c.broker.keyFile = certs.clientKeyFile
            c.broker.username = "hall"
            c.broker.password = "secret"
        }
        #expect(try await watcher.next("ble/gw/status").text == "online")
        #expect(try await watcher.next(BrokerConnectionTests.tagTopic).text.contains(#""name":"Tag""#))
        await bed.stop()
        _ = try await watcher.next("ble/gw/status") { $0.text == "offline" }

        // The password is checked over TLS too: refused with CONNACK return code 5 (MQTT 3.1.1, 3.2.2.3).
        var options = MQTTOptions(host: "127.0.0.1", port: tlsPort, clientID: "tls-wrong-password")
        options.tls = MQTTTLSOptions(caFile: certs.caFile, certFile: certs.clientCertFile, keyFile: certs.clientKeyFile)
        options.username = "hall"
        options.password = "wrong"
        let refused = try await BrokerConnectionTests.firstFailures(options, count: 1)
        #expect(refused.first?.0.operation == "CONNACK" && refused.first?.0.code == 5, "\(refused.map(\.0))")
        await watcher.stop()
    }

    /// A CA that did not sign the broker's certificate: each attempt fails with a typed TLS
    /// error on one line (the broker and OpenSSL's reason), the client tries again after its
    /// backoff, and a gateway connects as soon as the broker shows a certificate it trusts.
    @Test func aWrongCAIsATLSErrorAndTheGatewayKeepsTrying() async throws {
        let secrets = try BrokerSecrets.make()
        let certs = try await secrets.makeCertificates()
        let tlsPort = try Broker.freePort()
        let broker = try await Broker.start(settings: "allow_anonymous true\n"
            + Self.tlsListener(tlsPort, certs, cert: certs.serverCertFile, key: certs.serverKeyFile, clientCertificates: false))
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")

        var options = MQTTOptions(host: "127.0.0.1", port: tlsPort, clientID: "tls-wrong-ca")
        options.tls = MQTTTLSOptions(caFile: certs.otherCAFile)
        options.reconnectDelay = .seconds(1)
        options.reconnectMaximumDelay = .seconds(1)
        let failures = try await BrokerConnectionTests.firstFailures(options, count: 2)
        for (error, _) in failures {
            #expect(error.isTLSFailure && error.broker == "127.0.0.1:\(tlsPort)", "\(error)")
            #expect(error.detail.contains("certificate verify failed"), "\(error)")
            #expect(error.description.hasPrefix("TLS with the MQTT broker 127.0.0.1:\(tlsPort) failed (OpenSSL Error"), "\(error)")
            #expect(error.description.hasSuffix("; retrying with backoff"), "\(error)")
            #expect(!error.description.contains("\n"))
        }
        #expect(failures[1].1 - failures[0].1 >= .milliseconds(900), "the second attempt came without the backoff")

        let logs = LogLines()
        let bed = try await GatewayBed(broker: broker, peripherals: [BrokerConnectionTests.tag], logger: logs.logger) { c in
            c.broker.url = "mqtts://127.0.0.1:\(tlsPort)"
            c.broker.caFile = certs.otherCAFile
        }
        let publisher = bed.gateway.publisher
        #expect(await publisher.waitForConnectFailures(moreThan: 1, timeout: .seconds(15)))
        #expect(await publisher.lastError?.isTLSFailure == true)
        // The same failure again within the log interval (60 s) is not logged again.
        #expect(logs.all.filter { $0.hasPrefix("MQTT: TLS with the MQTT broker") }.count == 1, "\(logs.all)")

        // `ble gateway` says it on stderr, one line naming the broker and OpenSSL's reason.
        let vc = VirtualController(options: GatewayBed.immediate)
        let process = try Child(path: GatewayProcessTests.ble, ["-d", try vc.servePseudoTerminal(), "gateway", "--mqtt", "mqtts://127.0.0.1:\(tlsPort)",
                                                                 "--ca-file", certs.otherCAFile, "--id", "gwt", "--no-scan"])
        let stderr = await Child.read(process.stderr, timeout: .seconds(15)) { $0.contains("retrying with backoff\n") }
        let warning = stderr.split(separator: "\n").first { $0.contains("MQTT: TLS") }.map(String.init) ?? ""
        #expect(warning.hasPrefix("ble[warning]: MQTT: TLS with the MQTT broker 127.0.0.1:\(tlsPort) failed (OpenSSL Error"), "\(stderr)")
        #expect(warning.contains("certificate verify failed") && warning.hasSuffix("; retrying with backoff"), "\(stderr)")
        process.signal(SIGTERM)
        #expect(await process.waitForExit(timeout: .seconds(10)) == 0)

        // The broker now shows a certificate from the CA the gateway trusts.
        try await broker.restart(settings: "allow_anonymous true\n"
            + Self.tlsListener(tlsPort, certs, cert: certs.otherServerCertFile, key: certs.otherServerKeyFile, clientCertificates: false))
        #expect(try await watcher.next("ble/gw/status").text == "online")
        #expect(await publisher.connectFailures >= 2)
        await bed.stop()
        await watcher.stop()
    }
}
