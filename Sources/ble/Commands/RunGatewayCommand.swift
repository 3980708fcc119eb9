import BLECore
import BLEGateway
import Dispatch
import FoundationEssentials
import Glibc
import SMP

/// `ble gateway`: the BLE→MQTT gateway until SIGTERM or Ctrl-C; SIGHUP reloads the config.
enum RunGatewayCommand {
    static let spec = CommandSpec(
        name: "gateway",
        summary: "BLE→MQTT gateway: advertisements, links and commands over an MQTT broker",
        usage: ["gateway --mqtt mqtt://HOST:PORT --id GWID [--config FILE] [OPTIONS]"],
        options: [
            .value("mqtt", nil, "URL", "broker: mqtt://HOST[:PORT] or mqtts://HOST[:PORT] (TLS)"),
            .value("id", nil, "GWID", "gateway id: topics are ble/GWID/..."),
            .value("config", nil, "FILE", "JSON config (docs/gateway.md); flags override its values"),
            .value("mqtt-version", nil, "V", "MQTT protocol version: 3.1.1 (default) or 5"),
            .value("username", nil, "NAME", "broker user name"),
            .value("password", nil, "TEXT", "broker password (shows in ps; prefer --password-file)"),
            .value("password-file", nil, "FILE", "file holding the broker password"),
            .value("ca-file", nil, "FILE", "CA certificate(s) for TLS"),
            .value("cert-file", nil, "FILE", "client certificate for TLS"),
            .value("key-file", nil, "FILE", "client key for TLS"),
            .flag("insecure-tls", nil, "do not check that the broker's certificate names the host (testing only)"),
            .value("keep-alive", nil, "SECONDS", "MQTT keep-alive, 5 to 65535 (default 30)"),
            .value("reconnect-delay", nil, "SECONDS", "first wait before a new broker connection attempt, doubling (default 1)"),
            .value("reconnect-max-delay", nil, "SECONDS", "longest wait between broker connection attempts (default 30)"),
            .value("topic-prefix", nil, "TEXT", "first topic level (default ble)"),
            .value("layout", nil, "NAME", "advertisement topics: native, openmqttgateway or both (default native)"),
            .value("publish-interval", nil, "SECONDS", "an unchanged device is published again after SECONDS (default 10)"),
            .value("lost-after", nil, "SECONDS", "a device not heard for SECONDS is reported lost (default 30)"),
            .value("metrics-interval", nil, "SECONDS", "retained metrics every SECONDS (default 30)"),
            .value("queue", nil, "N", "messages kept while the broker is away (default 10000; the oldest is dropped)"),
            .flag("passive", nil, "scan passively (no scan requests)"),
            .flag("no-scan", nil, "do not publish advertisements (links and commands only)"),
            .flag("ha-discovery", nil, "publish Home Assistant MQTT discovery configs for RSSI and decoded values"),
            .value("state-dir", nil, "DIR", "keep the linked devices' GATT cache in DIR/gatt-cache and their subscriptions in DIR/restoration/links (default $STATE_DIRECTORY, else ~/.local/state/swift-ble-host/gateway)"),
        ],
        details: [
            "Publishes each advertising device on ble/GWID/devices/<ADDRESS>, a retained 'online' on ble/GWID/status (will: 'offline'), retained metrics on ble/GWID/metrics, and answers JSON commands from ble/GWID/commands on ble/GWID/responses/<id>. SIGTERM: links are closed, 'offline' is published, exit 0. SIGHUP: the config file is read again. A bad config is one line naming the key, exit 2.",
        ],
        examples: [
            ("ble gateway --mqtt mqtt://127.0.0.1:1883 --id hall", "advertisements of the devices around, to a local broker"),
            ("ble -d hci0 gateway --mqtt mqtts://broker:8883 --id gw1 --config /etc/ble-gateway.json", "with links and TLS from a config file"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        _ = try ctx.positionals([])
        let config = try configuration(ctx)
        let console = ctx.console
        try await withCentral(ctx, reopenable: true) { central in
            // Bonds of the devices that ask for a security level: the adapter's store under
            // --bond-dir / $BLE_BOND_DIR. Without such devices a store that cannot be opened
            // (no writable directory for a service user) is no reason to stop.
            let bonds: FileBondStore?
            do { bonds = try await BondsCommand.store(ctx, central: central) } catch {
                if config.devices.contains(where: { $0.security != nil }) { throw error }
                bonds = nil
            }
            let gateway: Gateway
            do throws(GatewayError) {
                gateway = try Gateway(central: central, config: config, bonds: bonds,
                                      stateDirectory: ctx.args.value("state-dir") ?? Gateway.defaultStateDirectory)
            } catch {
                if case GatewayError.config(let e) = error { throw UsageError(e.description) }
                throw CLIFailure(error.description)
            }
            console.status("gateway \(gateway.topics.gatewayID): broker \(config.broker.url ?? ""), topics \(config.topicPrefix)/\(gateway.topics.gatewayID)/...")
            // The gateway starts (and says "online") only once SIGTERM and SIGHUP are taken
            // (SignalPipe): a signal sent between the two would otherwise end the process.
            let (handlersReady, ready) = AsyncStream.makeStream(of: Void.self)
            let task = Task {
                for await _ in handlersReady {}
                try await gateway.run()
            }
            // What startup read of the executable is not needed again (ExecutableTrim).
            ExecutableTrim.schedule()
            let signals = SignalPipe.watch([SIGTERM, SIGHUP]) { number in
                if number == SIGHUP {
                    Task {
                        do {
                            try await gateway.reload(try configuration(ctx))
                            console.status("SIGHUP: config reloaded")
                        } catch {
                            console.status("SIGHUP: config not reloaded: \(error)")
                        }
                    }
                    return
                }
                console.status("SIGTERM: stopping")
                task.cancel()
                // The stop's waits are bounded one by one (links, cache, broker, controller), but
                // in sequence, and a starved machine stretches each: the process ends `stopLimit`
                // after SIGTERM whatever is still pending (the broker then sends the will).
                DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(stopLimitSeconds)) {
                    console.status("SIGTERM: not stopped within \(stopLimitSeconds) s; exiting (the broker sends the last will)")
                    // _exit: no atexit handler runs under a thread still inside OpenSSL or libmosquitto.
                    _exit(CLI.ExitCode.success)
                }
            }
            ready.finish()
            defer { signals?.cancel() }
            try await withTaskCancellationHandler {
                do { try await task.value } catch let e as GatewayError { throw CLIFailure(e.description) }
            } onCancel: {
                task.cancel()
            }
        }
    }

    /// A SIGTERM'd gateway exits within this many seconds (docs/gateway.md).
    static let stopLimitSeconds = 8

    /// The config file (when given) with the flags applied over it, checked.
    static func configuration(_ ctx: CommandContext) throws(UsageError) -> GatewayConfig {
        let a = ctx.args
        do throws(ConfigError) {
            var c = try a.value("config").map { p throws(ConfigError) in try GatewayConfig.load(path: p) } ?? GatewayConfig()
            if let v = a.value("mqtt") { c.broker.url = v }
            if let v = a.value("id") { c.id = v }
            if let v = a.value("mqtt-version") {
                guard let version = MQTTProtocolVersion(rawValue: v) else { throw ConfigError(key: "--mqtt-version", "\"\(v)\" is not 3.1.1 or 5") }
                c.broker.protocolVersion = version
            }
            if let v = a.value("username") { c.broker.username = v }
            if a.value("password") != nil, a.value("password-file") != nil {
                throw ConfigError(key: "--password-file", "give --password or --password-file, not both")
            }
            // A flag replaces whichever of the two the file gave.
            if let v = a.value("password") { (c.broker.password, c.broker.passwordFile) = (v, nil) }
            if let v = a.value("password-file") { (c.broker.password, c.broker.passwordFile) = (nil, v) }
            if let v = a.value("ca-file") { c.broker.caFile = v }
            if let v = a.value("cert-file") { c.broker.certFile = v }
            if let v = a.value("key-file") { c.broker.keyFile = v }
            if a.has("insecure-tls") { c.broker.insecureTLS = true }
            if let v = a.value("keep-alive") { c.broker.keepAlive = try seconds(v, "--keep-alive") }
            if let v = a.value("reconnect-delay") { c.broker.reconnectDelay = try seconds(v, "--reconnect-delay") }
            if let v = a.value("reconnect-max-delay") { c.broker.reconnectMaximumDelay = try seconds(v, "--reconnect-max-delay") }
            if let v = a.value("topic-prefix") { c.topicPrefix = v }
            if let v = a.value("layout") {
                guard let l = GatewayConfig.Layout(rawValue: v) else { throw ConfigError(key: "--layout", "\"\(v)\" is not native, openmqttgateway or both") }
                c.layout = l
            }
            if let v = a.value("publish-interval") { c.scan.publishInterval = try seconds(v, "--publish-interval") }
            if let v = a.value("lost-after") { c.scan.lostAfter = try seconds(v, "--lost-after") }
            if let v = a.value("metrics-interval") { c.metricsInterval = try seconds(v, "--metrics-interval") }
            if let v = a.value("queue") {
                guard let n = Int(v), n >= 1 else { throw ConfigError(key: "--queue", "needs a whole number of at least 1, not \"\(v)\"") }
                c.broker.queueCapacity = n
            }
            if a.has("passive") { c.scan.passive = true }
            if a.has("no-scan") { c.scan.enabled = false }
            if a.has("ha-discovery") { c.homeAssistantDiscovery = true }
            do { try c.validate() } catch {
                // A value a flag gave is named by the flag.
                guard let flag = flagOfKey[error.key], a.value(flag) != nil || a.has(flag) else { throw error }
                throw ConfigError(key: "--\(flag)", error.problem)
            }
            return c
        } catch {
            throw UsageError(error.description)
        }
    }

    /// The flag that sets each config key checked by `GatewayConfig.validate()`.
    static let flagOfKey: [String: String] = [
        "mqtt.url": "mqtt", "id": "id", "topicPrefix": "topic-prefix", "mqtt.passwordFile": "password-file",
        "mqtt.certFile": "cert-file", "mqtt.keyFile": "key-file", "mqtt.queueCapacity": "queue",
        "mqtt.keepAliveSeconds": "keep-alive", "mqtt.reconnectDelaySeconds": "reconnect-delay",
        "mqtt.reconnectMaximumDelaySeconds": "reconnect-max-delay",
        "scan.publishIntervalSeconds": "publish-interval", "scan.lostAfterSeconds": "lost-after",
        "metricsIntervalSeconds": "metrics-interval",
    ]

    static func seconds(_ text: String, _ option: String) throws(ConfigError) -> Duration {
        guard let v = Double(text), v.isFinite, v >= 0, v <= 86_400 else {
            throw ConfigError(key: option, "needs a number of seconds from 0 to 86400, not \"\(text)\"")
        }
        return .nanoseconds(Int64(v * 1e9))
    }
}
