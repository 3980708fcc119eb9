import BLECore
import BLEWire

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
        let data = try CaptureFile.read(path, limit: maximumFileSize)
        let reader: BTSnoopReader
        do {
            reader = try BTSnoopReader(bytes: data)
        } catch {
            throw CLIFailure("\(path) is not a btsnoop capture: \(error)")
        }
        CaptureDecoder.lines(of: reader, json: ctx.globals.json) { ctx.console.out($0) }
        if let trailing = reader.trailingError {
            ctx.console.status("the capture ends with a cut record: \(trailing)")
        }
    }
}
