import BLECore
import BLEWire
import BLETransport

/// `ble adapters`: the kernel's HCI adapters, and bringing one up or down.
enum AdaptersCommand {
    static let spec = CommandSpec(
        name: "adapters",
        summary: "list the HCI adapters the kernel knows, or bring one up or down",
        usage: ["adapters [--json]", "adapters --up hciN", "adapters --down hciN"],
        options: [
            .value("up", nil, "hciN", "power the adapter on (HCIDEVUP)"),
            .value("down", nil, "hciN", "power the adapter off (HCIDEVDOWN), as -d hciN (user channel) needs"),
        ],
        details: ["Lists index, address, up/down state and bus of every adapter in the kernel. Needs the kernel's Bluetooth support; H4 controllers (-d tcp:, serial:) are not kernel adapters."],
        examples: [
            ("ble adapters", "hci0  00:1A:7D:DA:71:13  DOWN  USB  Primary"),
            ("ble adapters --down hci0", "free hci0 for the user channel (ble -d hci0 ...)"),
            ("ble adapters --json", "one JSON object per adapter"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        _ = try ctx.positionals([])
        let up = try ctx.args.value("up").map { v throws(UsageError) in try Values.adapterIndex(v, option: "--up") }
        let down = try ctx.args.value("down").map { v throws(UsageError) in try Values.adapterIndex(v, option: "--down") }
        if up != nil && down != nil { throw UsageError("give --up or --down, not both") }
        if let up {
            try HCIAdapters.bringUp(index: up)
            ctx.console.status("hci\(up) is up")
            return
        }
        if let down {
            try HCIAdapters.bringDown(index: down)
            ctx.console.status("hci\(down) is down")
            return
        }
        let adapters = try HCIAdapters.list()
        if adapters.isEmpty {
            throw CLIFailure("the kernel knows no Bluetooth adapter; plug one in (check dmesg, rfkill list), or use an H4 controller with -d tcp:HOST:PORT or -d serial:/dev/ttyUSB0")
        }
        for a in adapters {
            if ctx.globals.json {
                ctx.console.out(JSONValue.object([
                    ("index", .int(a.index)), ("name", .string(a.name)), ("address", .string(a.address.description)),
                    ("up", .bool(a.isUp)), ("bus", .string(a.bus)), ("type", .string(a.type)),
                ]).text)
            } else {
                ctx.console.out("\(a.name)  \(a.address)  \(a.isUp ? "UP  " : "DOWN")  \(a.bus)  \(a.type)")
            }
        }
    }
}
