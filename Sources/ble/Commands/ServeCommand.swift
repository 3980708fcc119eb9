import BLECore
import Dispatch
import GATTServer
import Glibc

/// `ble serve`: a GATT server from a database file, advertised (again after each link ends),
/// every read, write and subscription printed; stdin lines become the `--notify`
/// characteristic's value and go out as its subscribers' CCCDs ask.
enum ServeCommand {
    static let spec = CommandSpec(
        name: "serve",
        summary: "serve a GATT database from a YAML or JSON file and advertise it",
        usage: ["serve DB.yaml|DB.json [--name NAME] [--notify UUID]"],
        options: [
            .value("name", nil, "NAME", "the advertised name and Device Name (default: the file's deviceName)"),
            .value("notify", nil, "UUID", "each stdin line becomes this characteristic's value, notified or indicated to its subscribers"),
        ],
        details: ["The file lists services: [{uuid, characteristics: [{uuid, properties, permissions, value, description}]}]; properties are named as 'ble inspect --json' names them (read, write, writeWithoutResponse, notify, indicate, authenticatedSignedWrites), permissions (readEncrypted, writeEncrypted, readAuthenticated, ...) default to what the properties allow, values are text or hex:0102 (docs/gatt-server.md). A bad file is one line naming the line (YAML) and the key, exit 2.",
                  "Advertises Flags, the name and the 16-bit service UUIDs that fit in 31 octets, connectable, and again after each link ends. Prints on stdout: 'connected ADDRESS', 'read ADDRESS UUID handle 0xHHHH: VALUE', 'write ...', 'subscribe ADDRESS UUID handle 0xHHHH: notifications|indications|off', 'sent UUID ...' for each stdin line, 'disconnected ADDRESS'.",
                  "A stdin line is the value as UTF-8 text, or hex: and hex digits; at most 512 octets. Ctrl-C (exit 130) or SIGTERM (exit 0) stops advertising and ends the links."],
        examples: [
            ("ble serve battery.yaml --name demo", "serve a battery service until Ctrl-C"),
            ("sensor-readings | ble serve thermometer.yaml --notify 2A1C", "notify each reading the program prints"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        let options = try ServeOptions(ctx)
        try await withCentral(ctx) { central in
            try await serve(central, options, console: ctx.console, logger: ctx.logger)
        }
    }

    static func serve(_ central: Central, _ options: ServeOptions, console: Console, logger: BLELogger) async throws {
        let server = GATTServer(database: options.database, queue: central.executor.queue)
        let activity = await server.activity()
        let links = await central.incomingConnections()
        let data = advertisingData(options)
        var parameters = AdvertisingParameters()
        parameters.resumeAfterDisconnect = true
        // Started in a task of its own, so that a Ctrl-C while the commands are under way
        // still leaves a set to stop (the controller may be advertising already).
        let set: AdvertisingSet
        do {
            set = try await Task { try await central.startAdvertising(data, parameters: parameters) }.value
        } catch {
            throw CLIFailure("\(error)")
        }
        let events = await set.events()
        console.status("serving \(options.database.services.count) service\(options.database.services.count == 1 ? "" : "s") from \(options.path); advertising \(data.bytes.count) octets\(options.name.map { " as \"\(TerminalText.escape($0))\"" } ?? ""); Ctrl-C to stop")
        let prepare = options.prepareLink
        let work = Task {
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
                                    try await server.serve(link)
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
        signal(SIGTERM, SIG_IGN)
        let term = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .main)
        term.setEventHandler {
            console.status("SIGTERM: stopping")
            work.cancel()
        }
        term.resume()
        defer { term.cancel() }
        let outcome = await withTaskCancellationHandler { await work.result } onCancel: { work.cancel() }
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
                    let notified = await server.notify(characteristic: uuid, value: value)
                    let confirmed = await server.indicate(characteristic: uuid, value: value)
                    console.out("sent \(uuid): \(ValueFormatter.text(value, uuid: uuid)) (notified \(notified), indications confirmed \(confirmed))")
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
    /// Runs on each incoming link before the server answers it: the place for the Security
    /// Manager as responder (pairing options such as an IO capability), once that is wired
    /// in. Without it links stay unencrypted, and attributes that need encryption or
    /// authentication are refused with Insufficient Encryption / Authentication.
    var prepareLink: (@Sendable (Connection) async throws -> Void)?

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
    }
}
