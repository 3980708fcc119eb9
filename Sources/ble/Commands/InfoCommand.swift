import BLECore
import BLEWire

/// `ble info`: what the controller says about itself.
enum InfoCommand {
    static let spec = CommandSpec(
        name: "info",
        summary: "show the controller: address, versions, manufacturer, LE features, buffers, roles",
        usage: ["info [--json]"],
        options: [],
        examples: [
            ("ble info", "the default controller ($BLE_DEVICE, else hci0)"),
            ("ble -d tcp:127.0.0.1:9000 info --json", "an H4 controller over TCP, as JSON"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        _ = try ctx.positionals([])
        let info = try await withCentral(ctx) { central in
            guard let info = await central.controllerInfo else {
                throw CLIFailure("the controller came up without reporting its information; retry with -vv to see the HCI exchange")
            }
            return info
        }
        if ctx.globals.json {
            ctx.console.out(json(info, device: ctx.globals.device).text)
        } else {
            for line in lines(info, device: ctx.globals.device) { ctx.console.out(line) }
        }
    }

    static func manufacturer(_ info: ControllerInfo) -> String {
        "\(info.manufacturerName ?? "unknown company") (0x\(hex(info.manufacturer, width: 4)))"
    }

    static func lines(_ info: ControllerInfo, device: String) -> [String] {
        var lines = [
            "Controller   \(device)",
            "Address      \(info.address)",
            "HCI version  \(info.hciVersion.name) (0x\(hex(info.hciVersion.rawValue, width: 2))), revision 0x\(hex(info.hciSubversion, width: 4))",
            "LMP version  \(info.lmpVersion.name) (0x\(hex(info.lmpVersion.rawValue, width: 2))), subversion 0x\(hex(info.lmpSubversion, width: 4))",
            "Manufacturer \(manufacturer(info))",
            "ACL buffers  \(info.aclPacketCount) x \(info.aclPacketLength) bytes\(info.sharesBREDRBuffers ? " (shared with BR/EDR)" : "")",
            "Roles        \(info.supportedRoles.isEmpty ? "none reported" : info.supportedRoles.joined(separator: ", "))",
            "LE features  0x\(hex(info.leFeatures.rawValue, width: 16))",
        ]
        for name in info.leFeatures.names { lines.append("  \(name)") }
        return lines
    }

    static func json(_ info: ControllerInfo, device: String) -> JSONValue {
        .object([
            ("device", .string(device)),
            ("address", .string(info.address.description)),
            ("hciVersion", .string(info.hciVersion.name)), ("hciVersionCode", .int(Int(info.hciVersion.rawValue))),
            ("hciRevision", .int(Int(info.hciSubversion))),
            ("lmpVersion", .string(info.lmpVersion.name)), ("lmpVersionCode", .int(Int(info.lmpVersion.rawValue))),
            ("lmpSubversion", .int(Int(info.lmpSubversion))),
            ("manufacturer", .int(Int(info.manufacturer))), ("manufacturerName", .optional(info.manufacturerName)),
            ("aclPacketLength", .int(info.aclPacketLength)), ("aclPacketCount", .int(info.aclPacketCount)),
            ("sharesBREDRBuffers", .bool(info.sharesBREDRBuffers)),
            ("roles", .array(info.supportedRoles.map(JSONValue.string))),
            ("leFeatures", .array(info.leFeatures.names.map(JSONValue.string))),
        ])
    }
}
