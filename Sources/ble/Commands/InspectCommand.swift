import BLECore
import GATTClient
import BLEWire

/// `ble inspect DEVICE`: the whole GATT tree, optionally with every readable value.
enum InspectCommand {
    static let spec = CommandSpec(
        name: "inspect",
        summary: "show a device's GATT tree: services, characteristics, descriptors; --read adds values",
        usage: ["inspect DEVICE [--read] [--json] [--security encrypted|authenticated] [--no-cache]"],
        options: [
            .flag("read", nil, "read every readable characteristic and descriptor and show its value"),
            LinkSecurity.option,
            GATTCacheOption.option,
            DeviceArgument.scanTimeoutOption,
        ],
        details: DeviceArgument.details + LinkSecurity.details + GATTCacheOption.details + ["Values are shown as hex, as an unsigned integer and UTF-8 text when those fit, and decoded for known characteristics (Heart Rate Measurement, Battery Level, Body Sensor Location, Appearance)."],
        examples: [
            ("ble inspect F0:5E:B1:00:00:01", "the tree with SIG names"),
            ("ble inspect \"HRM\" --read", "2A19 - Battery Level [read, notify] = 0x5A (1 byte, uint 90, \"Z\") -> 90 %"),
            ("ble inspect F0:5E:B1:00:00:02 --json | jq '.services[].uuid'", "the service UUIDs"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        let read = ctx.args.has("read")
        let json = ctx.globals.json
        try await withPeripheral(ctx) { peripheral in
            var servicesJSON: [JSONValue] = []
            for s in try await peripheral.services() {
                let sid = ServiceIdentifier(uuid: s.uuid)
                if !json { ctx.console.out("Service \(s.uuid)\(s.name.map { " - \($0)" } ?? "")  (handles 0x\(hex(s.handle, width: 4))-0x\(hex(s.endHandle, width: 4)))") }
                var characteristicsJSON: [JSONValue] = []
                for c in try await peripheral.characteristics(of: s) {
                    let cid = CharacteristicIdentifier(uuid: c.uuid, service: sid)
                    var value: Result<[UInt8], any Error>?
                    if read && c.properties.contains(.read) {
                        do { value = .success(try await peripheral.read(cid)) } catch { value = .failure(error) }
                    }
                    let props = "[" + c.properties.names.joined(separator: ", ") + "]"
                    if !json {
                        var line = "  \(c.uuid)\(c.name.map { " - \($0)" } ?? "")  \(props)"
                        switch value {
                        case .success(let v): line += " = " + ValueFormatter.text(v, uuid: c.uuid)
                        case .failure(let e): line += " = (read failed: \(TerminalText.escape(CLI.oneLine("\(e)"))))"
                        case nil: break
                        }
                        ctx.console.out(line)
                    }
                    var descriptorsJSON: [JSONValue] = []
                    for d in try await peripheral.descriptors(of: c) {
                        var dvalue: Result<[UInt8], any Error>?
                        if read {
                            do { dvalue = .success(try await peripheral.readDescriptor(DescriptorIdentifier(uuid: d.uuid, characteristic: cid))) } catch { dvalue = .failure(error) }
                        }
                        if !json {
                            var line = "    Descriptor \(d.uuid)\(d.name.map { " - \($0)" } ?? "")"
                            switch dvalue {
                            case .success(let v): line += " = " + ValueFormatter.text(v, uuid: nil)
                            case .failure(let e): line += " = (read failed: \(TerminalText.escape(CLI.oneLine("\(e)"))))"
                            case nil: break
                            }
                            ctx.console.out(line)
                        }
                        var dj: [(String, JSONValue)] = [("uuid", .string("\(d.uuid)")), ("name", .optional(d.name)), ("handle", .int(Int(d.handle)))]
                        if let dvalue { dj.append(("value", valueJSON(dvalue, uuid: nil))) }
                        descriptorsJSON.append(.object(dj))
                    }
                    var cj: [(String, JSONValue)] = [
                        ("uuid", .string("\(c.uuid)")), ("name", .optional(c.name)), ("handle", .int(Int(c.handle))),
                        ("valueHandle", .int(Int(c.valueHandle))),
                        ("properties", .array(GATTLookup.propertyNames(c.properties).map(JSONValue.string))),
                    ]
                    if let value { cj.append(("value", valueJSON(value, uuid: c.uuid))) }
                    cj.append(("descriptors", .array(descriptorsJSON)))
                    characteristicsJSON.append(.object(cj))
                }
                servicesJSON.append(.object([
                    ("uuid", .string("\(s.uuid)")), ("name", .optional(s.name)), ("handle", .int(Int(s.handle))),
                    ("endHandle", .int(Int(s.endHandle))), ("characteristics", .array(characteristicsJSON)),
                ]))
            }
            if json {
                ctx.console.out(JSONValue.object([("device", .string(ctx.args.positionals[0])), ("services", .array(servicesJSON))]).text)
            }
        }
    }

    static func valueJSON(_ r: Result<[UInt8], any Error>, uuid: BluetoothUUID?) -> JSONValue {
        switch r {
        case .success(let v): return ValueFormatter.json(v, uuid: uuid)
        case .failure(let e): return .object([("error", .string(CLI.oneLine("\(e)")))])
        }
    }
}
