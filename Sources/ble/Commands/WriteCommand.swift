import BLECore
import FoundationEssentials
import GATTClient
import BLETransport

/// `ble write DEVICE -c CHAR`: writes hex, text or a typed payload file.
enum WriteCommand {
    static let spec = CommandSpec(
        name: "write",
        summary: "write a characteristic: hex bytes, a string, or a typed JSON or YAML payload file",
        usage: ["write DEVICE -c CHAR [-s SERVICE] (--hex HEX | --string TEXT | --file PAYLOAD.yaml|.json) [--without-response | --signed] [--expect-reply-on CHAR] [--security encrypted|authenticated] [--no-cache]"],
        options: [
            .value("characteristic", "c", "UUID", "the characteristic (required)"),
            .value("service", "s", "UUID", "the service holding it (default: the first service that has it)"),
            .value("hex", "x", "HEX", "the value as hex bytes: 0a0b0c, \"0a 0b\", 0x0a0b"),
            .value("string", nil, "TEXT", "the value as UTF-8 text"),
            .value("file", "f", "FILE", "a payload file of typed fields (see below)"),
            .flag("without-response", nil, "Write Command instead of Write Request (no acknowledgement)"),
            .flag("signed", nil, "Signed Write Command with the bond's signing key (see 'ble pair --sign-key'); the link stays unencrypted"),
            .value("expect-reply-on", nil, "UUID", "subscribe to this characteristic first and print the first notification after the write"),
            LinkSecurity.option,
            GATTCacheOption.option,
            DeviceArgument.scanTimeoutOption,
        ],
        details: DeviceArgument.details + LinkSecurity.details + GATTCacheOption.details + [
            "A payload file lists typed fields encoded in order (little-endian unless 'be'):\n  {\"fields\": [{\"u8\": 1}, {\"u16le\": 513}, {\"u32le\": 5}, {\"i16le\": -2}, {\"string\": \"hi\"}, {\"hex\": \"0a0b\"}, {\"padding\": 3}]}\nor the same in YAML (a .yaml/.yml file, or any file not starting with '{' or '['):\n  fields: [{u8: 1}, {u16le: 513}, {string: hi}, {hex: \"0a0b\"}]\nTypes: u8 i8 u16le u16be i16le i16be u24le u32le u32be i32le i32be u64le i64le string hex padding. At most 512 bytes.",
        ],
        examples: [
            ("ble write F0:5E:B1:00:00:02 -c 6E400003-B5A3-F393-E0A9-E50E24DCCA9E --hex 01020304", "four bytes with a Write Request"),
            ("ble write \"Lamp\" -c FFE1 --string on --without-response", "text with a Write Command"),
            ("ble write F0:5E:B1:00:00:02 -c FFF1 --file command.json --expect-reply-on FFF2", "a typed payload and its reply"),
            ("ble write F0:5E:B1:00:00:02 -c FFF3 --hex 01 --signed", "a signed write without encryption (after 'ble pair --sign-key')"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        let a = ctx.args
        guard let c = a.value("characteristic") else {
            throw UsageError("'ble write' needs -c CHAR, the characteristic UUID; usage: ble \(spec.usage[0])")
        }
        let uuid = try Values.uuid(c, option: "-c")
        let service = try a.value("service").map { v throws(UsageError) in try Values.uuid(v, option: "-s") }
        let reply = try a.value("expect-reply-on").map { v throws(UsageError) in try Values.uuid(v, option: "--expect-reply-on") }
        let value = try payload(a)
        let signed = a.has("signed")
        if signed && reply != nil { throw UsageError("--signed writes without a reply: give --signed or --expect-reply-on, not both") }
        let type: GATTWriteType = a.has("without-response") || signed ? .withoutResponse : .withResponse
        try await withPeripheral(ctx, signing: signed) { peripheral in
            let (id, characteristic) = try await withTimeout(ctx.globals.timeoutDuration, "discovering \(uuid.gattDisplayName)") {
                try await GATTLookup.characteristic(peripheral, uuid: uuid, service: service)
            }
            let timeout = ctx.globals.timeoutDuration
            if signed {
                // Refused before signing when the characteristic lacks Authenticated Signed Writes.
                try await withTimeout(timeout, "writing \(uuid.gattDisplayName) signed") {
                    try await peripheral.writeSigned(value, to: id)
                }
                ctx.console.status("wrote \(value.count) bytes to \(uuid.gattDisplayName), signed")
                return
            }
            let needed: GATTCharacteristicProperties = type == .withResponse ? .write : .writeWithoutResponse
            if !characteristic.properties.contains(needed) {
                ctx.console.status("warning: \(uuid.gattDisplayName) does not list '\(type == .withResponse ? "write" : "write without response")' (its properties: \(characteristic.properties)); writing anyway")
            }
            if let reply {
                let (replyID, _) = try await GATTLookup.characteristic(peripheral, uuid: reply, service: nil)
                let answer = try await withTimeout(timeout + .seconds(1), "waiting for a reply on \(reply.gattDisplayName)") {
                    try await peripheral.writeAndAwaitNotification(value, to: id, type: type, response: replyID, timeout: timeout)
                }
                ctx.console.status("wrote \(value.count) bytes to \(uuid.gattDisplayName)")
                ctx.console.out(ctx.globals.json ? ReadCommand.line(answer, uuid: reply, time: Clock.timestamp()).text : ValueFormatter.text(answer, uuid: reply))
            } else {
                try await withTimeout(timeout, "writing \(uuid.gattDisplayName)") {
                    try await peripheral.write(value, to: id, type: type)
                }
                ctx.console.status("wrote \(value.count) bytes to \(uuid.gattDisplayName)")
            }
        }
    }

    /// The bytes from exactly one of --hex, --string, --file.
    static func payload(_ a: ParsedArguments) throws -> [UInt8] {
        let given = ["hex", "string", "file"].filter { a.value($0) != nil }
        guard given.count == 1 else {
            throw UsageError(given.isEmpty ? "'ble write' needs the value: --hex HEX, --string TEXT or --file PAYLOAD.json"
                                           : "give one of --hex, --string, --file, not " + given.map { "--\($0)" }.joined(separator: " and "))
        }
        if let h = a.value("hex") {
            let bytes = try Values.hexBytes(h, option: "--hex")
            guard bytes.count <= PayloadParser.maximumValueLength else { throw UsageError("--hex gives \(bytes.count) bytes, more than the 512 a characteristic value can hold") }
            return bytes
        }
        if let s = a.value("string") {
            guard s.utf8.count <= PayloadParser.maximumValueLength else { throw UsageError("--string gives \(s.utf8.count) bytes, more than the 512 a characteristic value can hold") }
            return Array(s.utf8)
        }
        let path = a.value("file") ?? ""
        // Read one byte past the limit so an oversized file is refused, never loaded whole.
        let bytes: [UInt8]
        do { bytes = try FileBytes.read(path, atMost: PayloadParser.maximumInputSize + 1) } catch {
            throw UsageError("cannot read payload file \(path): \(error.reason)")
        }
        do {
            return try PayloadFile.parse(bytes, name: path)
        } catch {
            throw UsageError("\(path): \(error)")
        }
    }
}
