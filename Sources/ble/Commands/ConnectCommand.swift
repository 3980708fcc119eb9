import BLECore
import BLEWire

/// `ble connect DEVICE`: holds the link and prints its lifecycle until Ctrl-C.
enum ConnectCommand {
    static let spec = CommandSpec(
        name: "connect",
        summary: "connect to a device and hold the link, printing its events until Ctrl-C",
        usage: ["connect DEVICE [--reconnect N] [--security encrypted|authenticated] [--phy 1m|2m|coded] [--own-address public|static|rpa] [--scan-timeout SECONDS] [--no-reopen]"],
        options: [
            .value("reconnect", nil, "N", "after an unexpected drop, reconnect up to N times (0: never; default 0)"),
            LinkSecurity.option,
            PHYOption.connectOption,
            OwnAddressOption.option,
            .value("scan-timeout", nil, "SECONDS", "how long to scan when DEVICE is a name (default 10)"),
            AdapterReopen.option,
        ],
        details: DeviceArgument.details + LinkSecurity.details + AdapterReopen.details,
        examples: [
            ("ble connect F0:5E:B1:00:00:01", "a random address"),
            ("ble connect 00:1A:7D:DA:71:13/public --reconnect 5", "a public address, reconnecting after drops"),
            ("ble connect \"HRM\"", "the first device whose name contains HRM"),
            ("ble connect F0:5E:B1:00:00:01 --phy coded", "long range: LE Coded S=8"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        let target = try DeviceResolver.parse(try ctx.positionals(["DEVICE"])[0])
        let attempts = try ctx.args.value("reconnect").map { v throws(UsageError) in try Values.integer(v, option: "--reconnect", as: UInt16.self) } ?? 0
        let scanTimeout = try DeviceArgument.scanTimeout(ctx)
        let required = try LinkSecurity.parse(ctx)
        var asked = ConnectionRequestParameters()
        asked.phy = try PHYOption.connect(ctx)
        let request = asked
        let ownAddress = try OwnAddressOption.parse(ctx)
        try await withCentral(ctx, reopenable: AdapterReopen.isOn(ctx)) { central in
            try await OwnAddressOption.apply(ownAddress, ctx, central: central)
            // After the adapter was lost and reopened, the link is made again on it.
            try await AdapterReopen.resuming(ctx, central: central, "connecting again") { _ in
                try await hold(ctx, central: central, target: target, attempts: attempts, scanTimeout: scanTimeout, required: required, request: request)
            }
        }
    }

    /// Connects and prints the link's events until Ctrl-C, or throws when the link ended.
    static func hold(_ ctx: CommandContext, central: Central, target: DeviceResolver.Target, attempts: UInt16,
                     scanTimeout: Duration, required: SecurityLevel?, request: ConnectionRequestParameters) async throws {
        let security = try await LinkSecurity(ctx, required: required, central: central)
        let peer = try await DeviceResolver.resolve(target, central: central, scanTimeout: scanTimeout, console: ctx.console, bonds: security.store)
        let policy: ReconnectPolicy = attempts == 0 ? .never : .always(maxAttempts: Int(attempts))
        let events = await central.connectionEvents()
        ctx.console.status("connecting to \(peer)...")
        let link = try await central.connect(peer, timeout: ctx.globals.timeoutDuration, reconnect: policy, parameters: request)
        do {
            try await security.apply(to: link)
        } catch {
            try? await link.disconnect(timeout: .seconds(2))
            throw error
        }
        let level = await link.securityLevel
        ctx.console.status("connected to \(peer)\(level > .none ? " (\(level))" : ""); Ctrl-C to disconnect")
        for await e in events where e.peer == peer {
            print(ctx, e.event, peer: peer)
            // A restored link is encrypted again before anything else (a bond, --security).
            if case .connected = e.event, await link.securityLevel == .none {
                do { try await security.apply(to: link) } catch { ctx.console.error("\(error)") }
            }
            if case .disconnected(_, let again) = e.event, !again { break }
            if case .reconnectFailed = e.event { break }
        }
        if Task.isCancelled {
            try? await link.disconnect(timeout: .seconds(2))
            ctx.console.status("disconnected")
        } else {
            throw CLIFailure("the link to \(peer) ended: \(await link.lastDisconnectReason.map { "\($0)" } ?? "disconnected")")
        }
    }

    static func print(_ ctx: CommandContext, _ event: ConnectionEvent, peer: LEAddress) {
        if ctx.globals.json {
            ctx.console.out(JSONValue.object([("time", .string(Clock.timestamp())), ("peer", .string("\(peer.address)")), ("event", .string("\(event)"))]).text)
        } else {
            ctx.console.out("\(Clock.timestamp())  \(peer.address)  \(event)")
        }
    }
}

/// Help text and options shared by the commands that take a DEVICE.
enum DeviceArgument {
    static let details = ["DEVICE is an address like F0:5E:B1:00:00:01, random unless written F0:5E:B1:00:00:01/public, or a part of the device's advertised name, resolved by scanning."]

    static let scanTimeoutOption = OptionSpec.value("scan-timeout", nil, "SECONDS", "how long to scan when DEVICE is a name (default 10)")

    static func scanTimeout(_ ctx: CommandContext) throws(UsageError) -> Duration {
        let s = try ctx.args.value("scan-timeout").map { v throws(UsageError) in try Values.seconds(v, option: "--scan-timeout") } ?? 10
        return .milliseconds(Int64(s * 1000))
    }
}
