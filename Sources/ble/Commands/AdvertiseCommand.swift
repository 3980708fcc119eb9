import BLECore
import BLEWire

/// `ble advertise`: one advertising set with a name, services, service and manufacturer data,
/// until --duration or Ctrl-C; centrals that connect are listed as they come and go.
enum AdvertiseCommand {
    static let spec = CommandSpec(
        name: "advertise",
        summary: "advertise a name, services and data; list the centrals that connect",
        usage: ["advertise [--name NAME] [--service UUID]... [--manufacturer CID:HEX] [--service-data UUID:HEX]... [--non-connectable] [--extended] [--interval MS] [--own-address public|static|rpa] [--duration SECONDS]"],
        options: [
            .value("name", nil, "NAME", "the complete local name"),
            .value("service", nil, "UUID", "a service UUID to list (repeatable)"),
            .value("manufacturer", nil, "CID:HEX", "manufacturer data: company ID (e.g. 0x05F1) and hex bytes"),
            .value("service-data", nil, "UUID:HEX", "service data: service UUID and hex bytes (repeatable)"),
            .flag("non-connectable", nil, "refuse connections (ADV_NONCONN_IND, or a non-connectable extended set)"),
            .flag("extended", nil, "extended advertising PDUs only: data past 31 octets, seen by extended scanners"),
            .value("interval", nil, "MS", "advertising interval in milliseconds (default 100; 20 to 10240 for legacy)"),
            .value("duration", nil, "SECONDS", "stop after SECONDS and exit 0 (default: until Ctrl-C)"),
            OwnAddressOption.advertisingOption,
        ],
        details: ["The data is one advertising set: Flags (LE General Discoverable, BR/EDR Not Supported), then the name, the service UUIDs, the service data and the manufacturer data, in that order. Legacy advertising carries 31 octets; --extended carries up to the controller's maximum advertising data length.",
                  "A central that connects gets a peripheral-role link; it is listed on stdout ('connected', then 'disconnected'), and advertising starts again after the link ends."],
        examples: [
            ("ble advertise --name demo --service 180D --duration 30", "a heart-rate name tag for 30 seconds"),
            ("ble advertise --manufacturer 0x05F1:0102 --non-connectable", "a beacon until Ctrl-C"),
            ("ble advertise --extended --name demo --service-data FEAA:$(printf '%080d' 0)", "data past 31 octets"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        _ = try ctx.positionals([])
        var (data, parameters) = try arguments(ctx.args)
        let duration = try ctx.args.value("duration").map { v throws(UsageError) in try Values.seconds(v, option: "--duration") }
        let ownAddress = try OwnAddressOption.parse(ctx)
        try await withCentral(ctx) { central in
            if let policy = try await OwnAddressOption.advertisingPolicy(ownAddress, ctx, central: central) { parameters.ownAddress = policy }
            let set: AdvertisingSet
            do {
                set = try await central.startAdvertising(data, parameters: parameters)
            } catch {
                throw CLIFailure("\(error)")
            }
            let octets = data.bytes.count
            let from = ownAddress == .public ? "" : set.controllerMakesAddresses ? " from resolvable private addresses the controller makes"
                : await set.address.map { " from \($0.address)" } ?? ""
            ctx.console.status("advertising \(octets) octets (\(set.usesExtendedCommands ? "extended commands" : "legacy commands"), set \(set.handle))\(from)\(duration.map { " for \(formatSeconds($0)) s" } ?? "; Ctrl-C to stop")")
            let links = await central.incomingConnections()
            let events = await set.events()
            let console = ctx.console
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await report(links, console: console) }
                group.addTask {
                    for await event in events {
                        if case .ended(let reason) = event { throw CLIFailure("advertising ended: \(reason)") }
                    }
                }
                if let duration {
                    group.addTask { try await Task.sleep(for: .milliseconds(Int64(duration * 1000))) }
                    _ = try await group.next()
                } else {
                    _ = try await group.next()
                }
                group.cancelAll()
            }
            do {
                try await set.stop()
            } catch {
                ctx.logger.log(.debug, "stopping the advertising set: \(error)")
            }
        }
    }

    /// Lists each incoming link as it connects and disconnects.
    static func report(_ links: AsyncStream<Connection>, console: Console) async {
        await withTaskGroup(of: Void.self) { group in
            for await link in links {
                console.out("connected \(link.peer) handle 0x\(hex(await link.handle ?? 0, width: 4))")
                group.addTask {
                    for await event in await link.events() {
                        if case .disconnected(let reason, _) = event {
                            console.out("disconnected \(link.peer): \(reason)")
                            return
                        }
                    }
                }
            }
        }
    }

    /// The advertising data and parameters the options ask for.
    static func arguments(_ a: ParsedArguments) throws(UsageError) -> (AdvertisingData, AdvertisingParameters) {
        var structures: [ADStructure] = [.flags([.leGeneralDiscoverable, .brEDRNotSupported])]
        if let name = a.value("name") {
            guard !name.isEmpty else { throw UsageError("--name needs a name, not an empty string") }
            structures.append(.completeLocalName(name))
        }
        var uuids: [BluetoothUUID] = []
        for s in a.all("service") { uuids.append(try Values.uuid(s, option: "--service")) }
        let sixteen = uuids.compactMap(\.uuid16)
        let wide = uuids.filter { $0.uuid16 == nil }
        if !sixteen.isEmpty { structures.append(.completeServiceUUIDs16(sixteen)) }
        if !wide.isEmpty { structures.append(.completeServiceUUIDs128(wide.map(\.value))) }
        for s in a.all("service-data") {
            let (uuidText, bytes) = try pair(s, option: "--service-data", what: "UUID:HEX (e.g. 180F:64)")
            let uuid = try Values.uuid(uuidText, option: "--service-data")
            structures.append(uuid.uuid16.map { .serviceData16(uuid: $0, data: bytes) } ?? .serviceData128(uuid: uuid.value, data: bytes))
        }
        if let s = a.value("manufacturer") {
            let (cidText, bytes) = try pair(s, option: "--manufacturer", what: "CID:HEX (e.g. 0x05F1:0102)")
            structures.append(.manufacturerSpecificData(companyID: try Values.integer(cidText, option: "--manufacturer", as: UInt16.self), data: bytes))
        }
        var p = AdvertisingParameters()
        p.kind = a.has("non-connectable") ? .nonConnectable : .connectable
        p.format = a.has("extended") ? .extended : .legacy
        p.resumeAfterDisconnect = true
        if let ms = a.value("interval") {
            let v = try Values.integer(ms, option: "--interval", as: Int.self)
            guard v >= 20, v <= 10_485_000 else { throw UsageError("--interval needs milliseconds from 20 to 10240 (legacy) or 10485000 (extended), not \(v)") }
            p.interval = .milliseconds(v)
        }
        return (AdvertisingData(structures), p)
    }

    /// "LEFT:HEX" split at the first colon, the right side as bytes.
    private static func pair(_ s: String, option: String, what: String) throws(UsageError) -> (String, [UInt8]) {
        guard let colon = s.firstIndex(of: ":"), colon != s.startIndex else { throw UsageError("\(option) needs \(what), not \"\(s)\"") }
        return (String(s[..<colon]), try Values.hexBytes(String(s[s.index(after: colon)...]), option: option))
    }
}
