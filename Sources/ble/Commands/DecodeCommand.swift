import BLECore
import Foundation

/// `ble decode FILE.btsnoop`: every packet of a capture, one line each.
enum DecodeCommand {
    static let spec = CommandSpec(
        name: "decode",
        summary: "decode a btsnoop capture: HCI, ACL, L2CAP, ATT and signaling, one line per packet",
        usage: ["decode FILE.btsnoop [--json]"],
        options: [],
        details: ["Reads captures in the btsnoop format (HCI UART/H4 or Linux monitor datalink), as written by --btsnoop, btmon -w or Android. '<' marks host to controller, '>' controller to host; times are seconds since the first packet. L2CAP PDUs split over several ACL packets are shown on the line of their last fragment."],
        examples: [
            ("ble decode session.btsnoop", "like btmon -r, with the stack's own decoders"),
            ("ble decode session.btsnoop --json | jq 'select(.cid == 4)'", "only ATT packets"),
        ],
        run: run)

    /// Captures larger than this are refused rather than read into memory.
    static let maximumFileSize = 512 * 1024 * 1024

    static func run(_ ctx: CommandContext) async throws {
        let path = try ctx.positionals(["FILE.btsnoop"])[0]
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard let size = attributes?[.size] as? Int else {
            throw CLIFailure("cannot read \(path): no such file; give the path of a btsnoop capture")
        }
        guard size <= maximumFileSize else {
            throw CLIFailure("\(path) is \(size) bytes, more than the \(maximumFileSize) bytes 'ble decode' reads; split it with 'editcap -c'")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure("cannot read \(path): permission denied or not a regular file")
        }
        let reader: BTSnoopReader
        do {
            reader = try BTSnoopReader(bytes: [UInt8](data))
        } catch {
            throw CLIFailure("\(path) is not a btsnoop capture: \(error)")
        }
        var describer = PacketDescriber()
        // Record numbers as in the file (and in Wireshark): undecodable records keep theirs.
        var bad = reader.undecodable[...]
        var number = 0
        func reportBad() {
            while let b = bad.first, b.index == number + 1 {
                number += 1
                bad = bad.dropFirst()
                ctx.console.out(ctx.globals.json
                    ? JSON.object([("index", .int(b.index)), ("error", .string("\(b.error)")), ("bytes", .string(hexString(b.bytes)))]).text
                    : "\(pad(String(b.index), 5)) undecodable packet (\(b.error)): \(hexString(b.bytes.prefix(32)))")
            }
        }
        for record in reader.records {
            reportBad()
            number += 1
            let line = describer.describe(record, index: number)
            ctx.console.out(ctx.globals.json ? line.json.text : line.text)
        }
        reportBad()
        if let trailing = reader.trailingError {
            ctx.console.status("the capture ends with a cut record: \(trailing)")
        }
    }
}
