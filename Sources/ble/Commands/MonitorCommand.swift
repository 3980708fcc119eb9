import BLECore
import BLEWire
import BLETransport

/// `ble monitor`: every HCI packet of the kernel's adapters, live, through the HCI monitor
/// channel (as btmon shows them), decoded by the same code as `ble decode`.
enum MonitorCommand {
    static let spec = CommandSpec(
        name: "monitor",
        summary: "show the HCI traffic of the kernel's adapters live (HCI monitor channel, like btmon)",
        usage: ["monitor [--adapter hciN] [--count N] [--duration SECONDS] [--json] [--btsnoop FILE]"],
        options: [
            .value("adapter", "i", "hciN", "only this adapter's traffic"),
            .value("count", nil, "N", "stop after N HCI packets"),
            .value("duration", nil, "SECONDS", "stop after SECONDS (default: until Ctrl-C)"),
        ],
        details: [
            "Reads the kernel's HCI monitor channel (HCI_CHANNEL_MONITOR): a copy of every command, event and ACL/SCO/ISO packet of every adapter the kernel owns, whoever sends them (bluetoothd, the kernel, a user-channel program), without disturbing them. Needs root or CAP_NET_RAW. Each packet is one line, decoded as by 'ble decode' (dynamic L2CAP channels followed from their setup), with the adapter first; adapters added, removed, opened and closed are lines too. With --btsnoop the packets are also written to FILE (btsnoop H4, readable by 'ble decode', btmon -r and Wireshark; the adapter index is not kept there).",
        ],
        examples: [
            ("sudo ble monitor", "like btmon"),
            ("sudo ble monitor --json | jq 'select(.attValue)'", "ATT values as they pass"),
            ("sudo ble monitor -i hci0 --btsnoop /tmp/hci0.btsnoop", "save hci0's traffic while watching it"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        _ = try ctx.positionals([])
        let adapter = try ctx.args.value("adapter").map { v throws(UsageError) in try Values.adapterIndex(v, option: "--adapter") }
        let count = try ctx.args.value("count").map { v throws(UsageError) in try Values.integer(v, option: "--count", as: Int.self) }
        if let count, count < 1 { throw UsageError("--count needs at least 1 packet, not \(count)") }
        let duration = try ctx.args.value("duration").map { v throws(UsageError) in try Values.seconds(v, option: "--duration") }

        let monitor = try HCIMonitor.open()
        let writer = try ctx.globals.btsnoop.map { path throws(TransportError) in try BTSnoopWriter(path: path, logger: ctx.logger) }
        defer {
            monitor.close()
            writer?.close()
        }
        let json = ctx.globals.json
        let console = ctx.console
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var lines = MonitorLines(json: json)
                var packets = 0
                for await event in monitor.events {
                    if let adapter, event.adapter != adapter { continue }
                    if case .packet(_, let direction, let packet, _) = event { writer?.write(packet, direction: direction) }
                    if let line = lines.line(for: event) { console.out(line) }
                    if case .packet = event {
                        packets += 1
                        if let count, packets >= count { break }
                    }
                }
            }
            if let duration {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(Int64(duration * 1000)))
                }
            }
            // Ends at the first finished task (count reached, duration passed), or on Ctrl-C.
            try await group.next()
            group.cancelAll()
            monitor.close()
        }
        if monitor.droppedEvents > 0 {
            ctx.console.status("\(monitor.droppedEvents) monitor events were dropped: the output could not keep up")
        }
    }
}

/// The lines of `ble monitor`: packets through one `PacketDescriber` per adapter (so handles
/// and channels of different adapters never mix), adapter events as lines of their own.
struct MonitorLines {
    let json: Bool
    private var describers: [Int: PacketDescriber] = [:]
    private var number = 0
    private var firstTimestamp: Int64?

    init(json: Bool) { self.json = json }

    mutating func line(for event: HCIMonitor.Event) -> String? {
        number += 1
        let now = BTSnoopEncoder.now()
        switch event {
        case .packet(let adapter, let direction, let packet, let timestamp):
            // Every describer measures time from the monitor's first record.
            let first = firstTimestamp ?? timestamp
            firstTimestamp = first
            var describer = describers[adapter] ?? PacketDescriber(firstTimestamp: first)
            let line = describer.describe(BTSnoopRecord(direction: direction, timestamp: timestamp, packet: packet), index: number)
            describers[adapter] = describer
            if json {
                guard case .object(let members) = line.json else { return line.json.text }
                return JSONValue.object([members[0], ("adapter", .int(adapter))] + members.dropFirst()).text
            }
            return "hci\(adapter) \(line.text)"
        case .adapterAdded(let adapter, let address, let name, let bus):
            return note(adapter, "added", "\(address) \(bus) \(name)", [("address", .string("\(address)")), ("bus", .string(bus)), ("name", .string(name))], now)
        case .adapterRemoved(let adapter):
            describers[adapter] = nil
            return note(adapter, "removed", "", [], now)
        case .adapterOpened(let adapter):
            return note(adapter, "opened", "", [], now)
        case .adapterClosed(let adapter):
            describers[adapter] = nil
            return note(adapter, "closed", "", [], now)
        case .note(let adapter, let text):
            return note(adapter, "note", text, [("text", .string(text))], now)
        case .undecodable(let adapter, let opcode, let bytes, let error):
            return note(adapter, "undecodable", "monitor opcode \(opcode) (\(error)): \(hexString(bytes.prefix(32)))",
                        [("opcode", .int(Int(opcode))), ("error", .string("\(error)")), ("bytes", .string(hexString(bytes)))], now)
        }
    }

    private mutating func note(_ adapter: Int?, _ what: String, _ text: String, _ fields: [(String, JSONValue)], _ timestamp: Int64) -> String {
        let first = firstTimestamp ?? timestamp
        firstTimestamp = first
        let micros = Int128(timestamp) - Int128(first)
        if json {
            return JSONValue.object([("index", .int(number)), ("adapter", adapter.map { .int($0) } ?? .null), ("time", .double(Double(micros) / 1_000_000)),
                                ("adapterEvent", .string(what))] + fields).text
        }
        let name = adapter.map { "hci\($0)" } ?? "-"
        return "\(name) \(pad(String(number), 5)) \(pad(formatSeconds(micros: micros), 12)) = \(what)\(text.isEmpty ? "" : " \(TerminalText.escape(text))")"
    }
}

extension HCIMonitor.Event {
    /// The adapter the event is about (nil: a system-wide note).
    var adapter: Int? {
        switch self {
        case .packet(let a, _, _, _), .adapterAdded(let a, _, _, _), .adapterRemoved(let a), .adapterOpened(let a),
             .adapterClosed(let a), .undecodable(let a, _, _, _):
            return a
        case .note(let a, _):
            return a
        }
    }
}
