import BLECore
import GATTClient
import BLEWire

/// `ble read DEVICE -c CHAR`: one read, or a stream of notifications or indications.
enum ReadCommand {
    static let spec = CommandSpec(
        name: "read",
        summary: "read a characteristic once, or stream its notifications or indications",
        usage: ["read DEVICE -c CHAR [-s SERVICE] [--notify | --indicate] [--count N] [--raw] [--out FILE] [--security encrypted|authenticated] [--no-cache] [--no-reopen]"],
        options: [
            .value("characteristic", "c", "UUID", "the characteristic (required)"),
            .value("service", "s", "UUID", "the service holding it (default: the first service that has it)"),
            .flag("notify", nil, "subscribe and print each notification with a timestamp"),
            .flag("indicate", nil, "subscribe and print each indication with a timestamp"),
            .value("count", "n", "N", "stop after N notifications or indications (default: until Ctrl-C)"),
            .flag("raw", nil, "write the value's bytes to stdout as they are, nothing else (each notification's bytes in turn)"),
            .value("out", "o", "FILE", "also write the value's bytes to FILE (created or truncated; notifications are appended in turn)"),
            LinkSecurity.option,
            GATTCacheOption.option,
            DeviceArgument.scanTimeoutOption,
            AdapterReopen.option,
        ],
        details: DeviceArgument.details + LinkSecurity.details + GATTCacheOption.details
            + ["With --notify or --indicate, an adapter that goes away (unplugged, removed, the H4 link dropped) is reopened, the link made again and the characteristic subscribed again, each said in a line on stderr; --no-reopen fails instead (exit status 1)."],
        examples: [
            ("ble read F0:5E:B1:00:00:01 -c 2A19", "0x5A (1 byte, uint 90, \"Z\") -> 90 %"),
            ("ble read \"HRM\" -c 2A37 --notify --count 10", "ten heart-rate measurements, one line each"),
            ("ble read F0:5E:B1:00:00:02 -c 2A00 --raw > name.bin", "the value's bytes, nothing else"),
            ("ble read F0:5E:B1:00:00:02 -s 6E400001-B5A3-F393-E0A9-E50E24DCCA9E -c 6E400004-B5A3-F393-E0A9-E50E24DCCA9E --indicate --json", "indications as JSON lines"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        let a = ctx.args
        guard let c = a.value("characteristic") else {
            throw UsageError("'ble read' needs -c CHAR, the characteristic UUID (e.g. -c 2A37); usage: ble \(spec.usage[0])")
        }
        let uuid = try Values.uuid(c, option: "-c")
        let service = try a.value("service").map { v throws(UsageError) in try Values.uuid(v, option: "-s") }
        if a.has("notify") && a.has("indicate") { throw UsageError("give --notify or --indicate, not both") }
        let count = try a.value("count").map { v throws(UsageError) in try Values.integer(v, option: "--count", as: UInt32.self) }
        if count != nil && !a.has("notify") && !a.has("indicate") { throw UsageError("--count applies to --notify or --indicate") }
        let subscribe = a.has("notify") ? "notification" : a.has("indicate") ? "indication" : nil
        let raw = a.has("raw")
        if raw && ctx.globals.json { throw UsageError("give --raw or --json, not both") }
        let out = try a.value("out").map { path throws(CLIFailure) in try ValueFile(path: path) }
        defer { out?.close() }
        /// Prints one value as asked: raw bytes, a JSON line or a text line; and into --out.
        func emit(_ value: [UInt8], time: String?) throws(CLIFailure) {
            try out?.append(value)
            if raw { ctx.console.bytes(value); return }
            if ctx.globals.json { ctx.console.out(line(value, uuid: uuid, time: time).text); return }
            ctx.console.out((time.map { "\($0)  " } ?? "") + ValueFormatter.text(value, uuid: uuid))
        }

        if a.has("no-reopen") && subscribe == nil { throw UsageError("--no-reopen applies to --notify or --indicate (a single read never reopens)") }
        var received: UInt32 = 0
        var subscribed = false
        // A stream of notifications outlives an adapter lost under it: reopened, the link is
        // made again and the characteristic subscribed again; the count goes on.
        try await withPeripheral(ctx, resumable: subscribe != nil) { peripheral in
            let (id, characteristic) = try await withTimeout(ctx.globals.timeoutDuration, "discovering \(uuid.gattDisplayName)") {
                try await GATTLookup.characteristic(peripheral, uuid: uuid, service: service)
            }
            guard let kind = subscribe else {
                let value = try await withTimeout(ctx.globals.timeoutDuration, "reading \(uuid.gattDisplayName)") {
                    try await peripheral.read(id)
                }
                try emit(value, time: nil)
                return
            }
            let needed: GATTCharacteristicProperties = kind == "notification" ? .notify : .indicate
            guard characteristic.properties.contains(needed) else {
                throw CLIFailure("\(uuid.gattDisplayName) does not support \(kind)s (its properties: \(characteristic.properties)); use \(characteristic.properties.contains(.notify) ? "--notify" : characteristic.properties.contains(.indicate) ? "--indicate" : "a plain read")")
            }
            if let count, received >= count { return }
            do {
                // Returns once the CCCD is written: nothing sent after the status line is missed.
                let stream = try await peripheral.subscribe(to: id, indications: kind == "indication")
                if !subscribed {
                    ctx.console.status("waiting for \(kind)s from \(uuid.gattDisplayName)\(count.map { " (\($0))" } ?? "; Ctrl-C to stop")")
                    subscribed = true
                }
                for try await value in stream {
                    let time = Clock.timestamp()
                    try emit(value, time: time)
                    received += 1
                    if let count, received >= count { break }
                }
            } catch let error as any BLEError where error.isCancellation {
            }
        }
    }

    static func line(_ value: [UInt8], uuid: BluetoothUUID, time: String?) -> JSONValue {
        var members: [(String, JSONValue)] = []
        if let time { members.append(("time", .string(time))) }
        members.append(("characteristic", .string("\(uuid)")))
        if case .object(let v) = ValueFormatter.json(value, uuid: uuid) { members += v }
        return .object(members)
    }
}
