import BLECore
import Dispatch
import GATTServer
import Glibc
import SMP
import BLEWire
import BLETransport

/// `ble serve`: a GATT server from a database file, advertised (again after each link ends),
/// every read, write and subscription printed; stdin lines become the `--notify`
/// characteristic's value and go out as its subscribers' CCCDs ask.
enum ServeCommand {
    static let spec = CommandSpec(
        name: "serve",
        summary: "serve a GATT database from a YAML or JSON file and advertise it",
        usage: ["serve DB.yaml|DB.json [--name NAME] [--notify UUID] [--io display-only|display-yesno|keyboard-only|no-io|keyboard-display] [--passkey N] [--accept-comparison] [--own-address public|static|rpa]"],
        options: [
            .value("name", nil, "NAME", "the advertised name and Device Name (default: the file's deviceName)"),
            .value("notify", nil, "UUID", "each stdin line becomes this characteristic's value, notified or indicated to its subscribers"),
            .value("io", nil, "CAPABILITY", "what this side can show or type when a central pairs (default no-io: Just Works)"),
            .value("passkey", nil, "N", "the six-digit passkey to answer with when the central shows one (--io keyboard-only or keyboard-display)"),
            .flag("accept-comparison", nil, "answer Numeric Comparison with yes without asking (without it a comparison is refused: stdin is the --notify feed)"),
            OwnAddressOption.advertisingOption,
        ],
        details: ["The file lists services: [{uuid, characteristics: [{uuid, properties, permissions, value, description}]}]; properties are named as 'ble inspect --json' names them (read, write, writeWithoutResponse, notify, indicate, authenticatedSignedWrites), permissions (readEncrypted, writeEncrypted, readAuthenticated, ...) default to what the properties allow, values are text or hex:0102 (docs/gatt-server.md). A bad file is one line naming the line (YAML) and the key, exit 2.",
                  "Advertises Flags, the name and the 16-bit service UUIDs that fit in 31 octets, connectable, and again after each link ends. Prints on stdout: 'connected ADDRESS', 'read ADDRESS UUID handle 0xHHHH: VALUE', 'write ...', 'subscribe ADDRESS UUID handle 0xHHHH: notifications|indications|off', 'sent UUID ...' for each stdin line, 'disconnected ADDRESS'.",
                  "A central may pair (this side answers as the SMP responder, LE Secure Connections or legacy, bonding) and bonds go to --bond-dir like 'ble pair' keeps them. A passkey for the central to type prints as 'passkey 123456'; then 'paired ADDRESS encrypted, ..., bonded' or 'pairing failed ADDRESS: ...', and 'encrypted ADDRESS LEVEL' each time a link's security changes. A read or write refused for Insufficient Authentication or Encryption is followed by a Security Request. A bonded central's subscriptions (CCCDs) come back when it encrypts a later link, and its signed writes are checked with its CSRK and a SignCounter that must increase (kept in the bond).",
                  "--own-address static or rpa advertises from this adapter's static random address or from resolvable private addresses of its local IRK (a new one every 15 min); a central that pairs gets the IRK and the identity address (the static one, or the public one for rpa), so it finds this side again by its later addresses.",
                  "A stdin line is the value as UTF-8 text, or hex: and hex digits; at most 512 octets. Ctrl-C (exit 130) or SIGTERM (exit 0) stops advertising and ends the links."],
        examples: [
            ("ble serve battery.yaml --name demo", "serve a battery service until Ctrl-C"),
            ("sensor-readings | ble serve thermometer.yaml --notify 2A1C", "notify each reading the program prints"),
            ("ble serve secret.yaml --io display-only", "a central pairs by typing the passkey printed"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        var options = try ServeOptions(ctx)
        let ownAddress = try OwnAddressOption.parse(ctx)
        try await withCentral(ctx) { central in
            let bonds = try await BondsCommand.store(ctx, central: central)
            if let policy = try await OwnAddressOption.advertisingPolicy(ownAddress, ctx, central: central) {
                options.ownAddress = policy
                options.pairing.localIdentity = try await OwnAddressOption.identity(ownAddress, ctx, central: central)
            }
            try await serve(central, options, bonds: bonds, console: ctx.console, logger: ctx.logger)
        }
    }

    static func serve(_ central: Central, _ options: ServeOptions, bonds: any BondStore, console: Console, logger: BLELogger) async throws {
        let server = GATTServer(database: options.database, queue: central.executor.queue, logger: logger)
        await server.setSignedWriteVerifier(BondStoreSignatureVerifier(store: bonds))
        let activity = await server.activity()
        // Set before incomingConnections() offers a link, so a central that pairs at once is answered.
        await central.acceptPairing(options: options.pairing, agent: ServeAgent(console: console, passkey: options.passkey, acceptsComparison: options.acceptComparison),
                                    store: bonds) { link, result in
            console.out(ServeOutput.pairing(link.peer, result))
            if case .success = result { Task { await server.bondSaved(on: link) } }
        }
        let links = await central.incomingConnections()
        let data = advertisingData(options)
        var parameters = AdvertisingParameters()
        parameters.resumeAfterDisconnect = true
        parameters.ownAddress = options.ownAddress
        // A Ctrl-C while the commands are under way leaves nothing advertising (the start undoes itself).
        let set: AdvertisingSet
        do {
            set = try await central.startAdvertising(data, parameters: parameters)
        } catch {
            throw CLIFailure("\(error)")
        }
        let events = await set.events()
        let from: String
        if case .public = options.ownAddress {
            from = ""
        } else if set.controllerMakesAddresses {
            from = " from resolvable private addresses the controller makes"
        } else {
            from = await set.address.map { " from \($0.address)" } ?? ""
        }
        console.status("serving \(options.database.services.count) service\(options.database.services.count == 1 ? "" : "s") from \(options.path); advertising \(data.bytes.count) octets\(options.name.map { " as \"\(TerminalText.escape($0))\"" } ?? "")\(from); Ctrl-C to stop")
        let prepare = options.prepareLink
        // The server starts once SIGTERM is taken by the source below, so a SIGTERM sent as soon
        // as it advertises is never lost.
        let (handlerReady, ready) = AsyncStream.makeStream(of: Void.self)
        let work = Task {
            for await _ in handlerReady {}
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { for await event in activity { console.out(ServeOutput.line(event)) } }
                group.addTask {
                    // Each link on its own (one being prepared does not hold up the next); a discarding
                    // group keeps nothing of the links that are done.
                    await withDiscardingTaskGroup { accepted in
                        for await link in links {
                            accepted.addTask {
                                do {
                                    if let prepare { try await prepare(link) }
                                    let changes = await link.events(bufferingPolicy: .bufferingNewest(8))
                                    try await server.serve(link, bonds: bonds)
                                    // Until the link ends (an incoming link is not reconnected).
                                    for await event in changes {
                                        if case .securityChanged(let level) = event { console.out("encrypted \(link.peer.address) \(level)") }
                                        if case .disconnected = event { break }
                                    }
                                } catch {
                                    console.status("not serving \(link.peer.address): \(error)")
                                }
                            }
                        }
                    }
                }
                group.addTask {
                    for await event in events {
                        if case .ended(let reason) = event { throw CLIFailure("advertising ended: \(reason)") }
                    }
                }
                if let uuid = options.notify {
                    group.addTask { await sendLines(of: uuid, server: server, console: console) }
                }
                try await group.waitForAll()
            }
        }
        // SIGTERM ends the server like Ctrl-C, with exit status 0 (a service manager's stop).
        let term = SignalPipe.watch([SIGTERM]) { _ in
            console.status("SIGTERM: stopping")
            work.cancel()
        }
        ready.finish()
        defer { term?.cancel() }
        let outcome = await withTaskCancellationHandler { await work.result } onCancel: { work.cancel() }
        let stats = await server.notificationStatistics()
        if stats.sent + stats.dropped > 0 { console.status("notifications: \(stats.sent) sent, \(stats.dropped) dropped (a link's queue was full)") }
        // Stopped in a task of its own: the command's task may be cancelled already.
        await Task {
            do { try await set.stop() } catch { logger.log(.debug, "stopping the advertising set: \(error)") }
        }.value
        try outcome.get()
    }

    /// Flags, the name, and the primary services' 16-bit UUIDs when they fit in 31 octets.
    static func advertisingData(_ options: ServeOptions) -> AdvertisingData {
        var structures: [ADStructure] = [.flags([.leGeneralDiscoverable, .brEDRNotSupported])]
        if let name = options.name { structures.append(.completeLocalName(name)) }
        var uuids: [UInt16] = []
        for s in options.database.services where s.isPrimary {
            if let u = s.uuid.uuid16, !uuids.contains(u) { uuids.append(u) }
        }
        if !uuids.isEmpty, AdvertisingData(structures + [.completeServiceUUIDs16(uuids)]).bytes.count <= 31 {
            structures.append(.completeServiceUUIDs16(uuids))
        }
        return AdvertisingData(structures)
    }

    /// Each stdin line: the characteristic's new value, notified and indicated to the links
    /// whose CCCD asks for it. Ends at the end of stdin (the server goes on).
    static func sendLines(of uuid: BluetoothUUID, server: GATTServer, console: Console) async {
        let (chunks, room) = StandardInput.chunks(size: 4096)
        var lines = InputLines(limit: 2 * PayloadParser.maximumValueLength + 4)
        for await chunk in chunks {
            room.signal()
            for line in lines.append(chunk) {
                guard let text = line else {
                    console.status("a stdin line was longer than \(lines.limit) bytes: ignored")
                    continue
                }
                switch ServeOutput.value(text) {
                case .failure(let why):
                    console.status("stdin line not sent: \(why)")
                case .success(let value):
                    await server.setValue(value, of: uuid)
                    // Waits for room on links whose queue is full: stdin is read no faster than they take it.
                    let notified = await server.notify(characteristic: uuid, value: value, waitingUpTo: .seconds(1))
                    let confirmed = await server.indicate(characteristic: uuid, value: value)
                    let dropped = notified.dropped > 0 ? ", dropped \(notified.dropped)" : ""
                    console.out("sent \(uuid): \(ValueFormatter.text(value, uuid: uuid)) (notified \(notified.queued)\(dropped), indications confirmed \(confirmed))")
                }
            }
        }
    }
}

/// What `ble serve` was asked to do.
struct ServeOptions: Sendable {
    var path: String
    var database: GATTDatabase
    /// The advertised name (also the GAP Device Name).
    var name: String?
    /// The characteristic stdin lines update.
    var notify: BluetoothUUID?
    /// Runs on each incoming link before the server answers it (pairing is answered on every
    /// link already, by `Central.acceptPairing`).
    var prepareLink: (@Sendable (Connection) async throws -> Void)?
    /// How this side answers a central's pairing (`--io`).
    var pairing = PairingOptions.responder
    /// The passkey to answer with when the central displays one (`--passkey`).
    var passkey: UInt32?
    /// Numeric Comparison answered yes (`--accept-comparison`); refused otherwise.
    var acceptComparison = false
    /// The address to advertise with (`--own-address`).
    var ownAddress: OwnAddress = .public

    init(_ ctx: CommandContext) throws(UsageError) {
        path = try ctx.positionals(["DB.yaml|DB.json"])[0]
        database = try DatabaseFile.load(path)
        if let n = ctx.args.value("name") {
            guard !n.isEmpty else { throw UsageError("--name needs a name, not an empty string") }
            database.deviceName = n
        }
        name = database.deviceName
        if let text = ctx.args.value("notify") {
            let uuid = try Values.uuid(text, option: "--notify")
            let characteristic = database.services.lazy.flatMap(\.characteristics).first { $0.uuid == uuid }
            guard let characteristic else { throw UsageError("--notify \(uuid): \(path) has no characteristic \(uuid)") }
            guard !characteristic.properties.intersection([.notify, .indicate]).isEmpty else {
                throw UsageError("--notify \(uuid): the characteristic has neither notify nor indicate in its properties in \(path)")
            }
            notify = uuid
        }
        if let io = ctx.args.value("io") {
            guard let c = PairCommand.ioNames.first(where: { $0.0 == io })?.1 else {
                throw UsageError("--io needs one of \(PairCommand.ioNames.map(\.0).joined(separator: ", ")), not \"\(io)\"")
            }
            pairing.ioCapability = c
        }
        passkey = try ctx.args.value("passkey").map { v throws(UsageError) in try Values.integer(v, option: "--passkey", as: UInt32.self) }
        if let passkey, passkey > 999_999 { throw UsageError("--passkey is six digits (0 to 999999), not \(passkey)") }
        acceptComparison = ctx.args.has("accept-comparison")
    }
}
