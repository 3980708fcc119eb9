import BLECore
import GATTServer
import BLEWire
import BLETransport

/// Reads the attribute database of `ble serve` from a YAML or JSON file (the format of
/// `GATTDatabase(tree:)`, docs/gatt-server.md): the bytes through `PayloadFile`'s readers,
/// bounded like a payload file, then the tree into a `GATTDatabase`. Any problem is a
/// `UsageError` naming the file, the line (YAML) and the key
/// (`db.yaml, line 7: services[0].characteristics[1].properties: ...`).
///
///     let db = try DatabaseFile.load("thermostat.yaml")
enum DatabaseFile {
    static func load(_ path: String) throws(UsageError) -> GATTDatabase {
        // One byte past the limit, so an oversized file is refused, never loaded whole.
        let bytes: [UInt8]
        do { bytes = try FileBytes.read(path, atMost: PayloadParser.maximumInputSize + 1) } catch {
            throw UsageError("cannot read database file \(path): \(error.reason)")
        }
        return try parse(bytes, name: path)
    }

    static func parse(_ bytes: [UInt8], name: String) throws(UsageError) -> GATTDatabase {
        guard bytes.count <= PayloadParser.maximumInputSize else {
            throw UsageError("\(name): more than \(PayloadParser.maximumInputSize) bytes; a database file is at most 64 KiB")
        }
        let tree: PayloadValue
        do throws(PayloadError) {
            tree = PayloadFile.isYAML(bytes, name: name) ? try PayloadFile.yaml(bytes) : try PayloadFile.json(bytes)
        } catch {
            switch error {
            case .syntax(let format, let detail): throw UsageError("\(name): not valid \(format): \(detail)")
            case .shape(let why): throw UsageError("\(name): \(why); write services: [{uuid: 180F, characteristics: [{uuid: 2A19, properties: [read]}]}]")
            default: throw UsageError("\(name): \(error)")
            }
        }
        do {
            return try GATTDatabase(tree: json(tree))
        } catch {
            let line = PayloadFile.isYAML(bytes, name: name) ? YAMLLocation.line(of: error.path, in: bytes) : nil
            throw UsageError("\(name)\(line.map { ", line \($0)" } ?? ""): \(error)")
        }
    }

    /// The parsed file as the tree `GATTDatabase(tree:)` reads: a YAML plain scalar or a JSON
    /// number that is a whole number becomes an integer (a 16-bit UUID such as 2902), any
    /// other scalar text.
    static func json(_ value: PayloadValue) -> JSONValue {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .number(let text), .plain(let text):
            if let n = Int(text) { return .int(n) }
            if case .number = value, let d = Double(text) { return .double(d) }
            return .string(text)
        case .string(let s): return .string(s)
        case .array(let items): return .array(items.map(json))
        case .object(let members): return .object(members.map { ($0.0, json($0.1)) })
        }
    }
}
