import BLECore
import BLEWire

/// `ble scan`: advertising devices, as a live table on a terminal or lines/JSON when piped.
enum ScanCommand {
    static let spec = CommandSpec(
        name: "scan",
        summary: "scan for advertising devices: live table on a terminal, one line per change when piped",
        usage: ["scan [--service UUID]... [--name SUBSTR] [--min-rssi N] [--manufacturer ID] [--passive] [--duplicates] [--phy 1m|coded|1m,coded] [--own-address public|static|rpa] [--duration SECONDS] [--no-reopen] [--json]"],
        options: [
            .value("service", nil, "UUID", "only devices advertising this service (repeatable; any one matches)"),
            .value("name", nil, "SUBSTR", "only devices whose name contains SUBSTR (ignoring case)"),
            .value("min-rssi", nil, "N", "only reports at least N dBm strong (e.g. -70)"),
            .value("manufacturer", nil, "ID", "only devices with manufacturer data of company ID (e.g. 0x004C)"),
            .flag("passive", nil, "listen only: send no scan requests (names in scan responses stay unknown)"),
            .flag("duplicates", nil, "report every advertisement, not only new or changed devices"),
            .value("duration", nil, "SECONDS", "stop after SECONDS (default: until Ctrl-C)"),
            PHYOption.scanOption,
            OwnAddressOption.option,
            AdapterReopen.option,
        ],
        details: ["On a terminal the table is redrawn in place, strongest signal first (smoothed RSSI). Piped or with --json, one line per new or changed device: 'discovered' or 'updated', and 'lost' for devices not heard for 10 s.",
                  "A bonded device that advertises with a resolvable private address is shown with its identity address too ('= IDENTITY' in the table and lines, identityAddress in JSON), resolved with the bond's IRK."]
            + AdapterReopen.details,
        examples: [
            ("ble scan", "live table until Ctrl-C"),
            ("ble scan --duration 5 --service 180D", "heart-rate sensors for 5 seconds"),
            ("ble scan --json --min-rssi -70 | jq -r .name", "names of nearby devices"),
            ("ble scan --phy 1m,coded", "long-range (LE Coded) advertisers too"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        _ = try ctx.positionals([])
        let a = ctx.args
        var services: [BluetoothUUID] = []
        for s in a.all("service") { services.append(try Values.uuid(s, option: "--service")) }
        let minRSSI = try a.value("min-rssi").map { v throws(UsageError) in try Values.integer(v, option: "--min-rssi", as: Int8.self) }
        let manufacturer = try a.value("manufacturer").map { v throws(UsageError) in try Values.integer(v, option: "--manufacturer", as: UInt16.self) }
        let duration = try a.value("duration").map { v throws(UsageError) in try Values.seconds(v, option: "--duration") }
        let filter = ScanFilter(services: services, nameContains: a.value("name"), minimumRSSI: minRSSI, manufacturerID: manufacturer)
        let options = ScanOptions(mode: a.has("passive") ? .passive : .active, allowDuplicates: a.has("duplicates"),
                                  lostTimeout: .seconds(10), phys: try PHYOption.scan(ctx))
        let limit = duration.map { Duration.milliseconds(Int64($0 * 1000)) }
        let live = ctx.console.stdoutIsTTY && !ctx.globals.json
        let ownAddress = try OwnAddressOption.parse(ctx)

        try await withCentral(ctx, reopenable: AdapterReopen.isOn(ctx)) { central in
            try await OwnAddressOption.apply(ownAddress, ctx, central: central)
            let end = limit.map { ContinuousClock.now + $0 }
            if !live { ctx.console.status("scanning\(duration.map { " for \(formatSeconds($0)) s" } ?? " (Ctrl-C to stop)")") }
            // After the adapter was lost and reopened, the scan starts again on it for the
            // time left (the controller was reset: the resolving list is loaded again).
            try await AdapterReopen.resuming(ctx, central: central, "scanning again") { _ in
                var scan = options
                scan.timeout = end.map { $0 - ContinuousClock.now }
                if let left = scan.timeout, left <= .zero { return }
                _ = await BondedAddresses.enableIfPossible(ctx, central: central)
                let scanning = scan
                try await AdapterReopen.untilHardwareError(central) {
                    if live {
                        try await liveTable(ctx, central: central, filter: filter, options: scanning, duration: scanning.timeout)
                    } else {
                        try await lines(ctx, central: central, filter: filter, options: scanning)
                    }
                }
            }
        }
    }

    static func lines(_ ctx: CommandContext, central: Central, filter: ScanFilter, options: ScanOptions) async throws {
        do {
            for try await event in await central.scan(filter: filter, options: options) {
                let (name, p): (String, DiscoveredPeripheral)
                switch event {
                case .discovered(let d): (name, p) = ("discovered", d)
                case .updated(let d): (name, p) = ("updated", d)
                case .lost(let d): (name, p) = ("lost", d)
                }
                ctx.console.out(ctx.globals.json ? ScanFormat.json(name, p).text : ScanFormat.line(name, p))
            }
        } catch let error as any BLEError where error.isCancellation {
        }
    }

    static func liveTable(_ ctx: CommandContext, central: Central, filter: ScanFilter, options: ScanOptions, duration: Duration?) async throws {
        let console = ctx.console
        let environment = ctx.environment
        let scheduler = central.host.scheduler
        console.raw("\u{1B}[?25l\u{1B}[2J\u{1B}[H")
        defer { console.raw("\u{1B}[?25h") }
        let stream = await central.discoveredPeripherals(filter: filter, options: options, interval: .milliseconds(250))
        let draw: @Sendable () async -> Void = {
            for await list in stream {
                console.raw(ScanFormat.table(list, now: scheduler.now(), console: console, width: console.terminalWidth(environment: environment)))
            }
        }
        if let duration {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await draw() }
                group.addTask { try? await Task.sleep(for: duration) }
                await group.next()
                group.cancelAll()
            }
        } else {
            await draw()
        }
    }
}
