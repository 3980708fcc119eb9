import BLECore
import CYAML
import FoundationEssentials
import BLEWire

/// Reads a payload file of `ble write --file` into its value: JSON through FoundationEssentials'
/// JSONDecoder, YAML through libyaml (Debian's libyaml-dev), then `PayloadParser.encode`.
/// A file ending in .yaml or .yml is YAML, one ending in .json is JSON; otherwise a file whose
/// first non-blank character is `{` or `[` is JSON and any other YAML.
///
///     let bytes = try PayloadFile.parse(Array(contents), name: "payload.yaml")
///
/// Bounded: at most `PayloadParser.maximumInputSize` bytes, nesting at most
/// `PayloadParser.maximumDepth`, and at most `maximumNodes` values, so YAML aliases that
/// refer to each other cannot expand without end.
enum PayloadFile {
    static let maximumNodes = 10_000

    static func parse(_ input: [UInt8], name: String) throws(PayloadError) -> [UInt8] {
        guard input.count <= PayloadParser.maximumInputSize else {
            throw .inputTooLarge(bytes: input.count, limit: PayloadParser.maximumInputSize)
        }
        return try PayloadParser.encode(try isYAML(input, name: name) ? yaml(input) : json(input))
    }

    static func isYAML(_ input: [UInt8], name: String) -> Bool {
        let lower = name.lowercased()
        if lower.hasSuffix(".yaml") || lower.hasSuffix(".yml") { return true }
        if lower.hasSuffix(".json") { return false }
        let first = input.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        return first != UInt8(ascii: "{") && first != UInt8(ascii: "[")
    }

    // MARK: JSON

    static func json(_ input: [UInt8]) throws(PayloadError) -> PayloadValue {
        do {
            return try JSONDecoder().decode(JSONNode.self, from: Data(input)).value
        } catch let error as DecodingError {
            // JSONDecoder says only "not valid JSON"; JSONSyntax says where and why.
            if case .dataCorrupted(let c) = error, c.codingPath.isEmpty, let why = JSONSyntax.firstError(in: input) {
                throw .syntax(format: "JSON", detail: why.description)
            }
            throw .syntax(format: "JSON", detail: describe(error))
        } catch let error as PayloadError {
            throw error
        } catch {
            throw .syntax(format: "JSON", detail: "\(error)")
        }
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let c):
            return c.debugDescription
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c):
            return c.debugDescription
        @unknown default:
            return "\(error)"
        }
    }

    /// One JSON value; numbers keep their text (JSONDecoder gives UInt64, Int64 or Double).
    struct JSONNode: Decodable {
        var value: PayloadValue

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            guard decoder.codingPath.count <= PayloadParser.maximumDepth else {
                throw PayloadError.syntax(format: "JSON", detail: "nested deeper than \(PayloadParser.maximumDepth) levels")
            }
            if let object = try? decoder.container(keyedBy: Key.self) {
                value = .object(try object.allKeys.sorted { $0.stringValue < $1.stringValue }.map { key in
                    (key.stringValue, try object.decode(JSONNode.self, forKey: key).value)
                })
                return
            }
            if var array = try? decoder.unkeyedContainer() {
                var items: [PayloadValue] = []
                while !array.isAtEnd { items.append(try array.decode(JSONNode.self).value) }
                value = .array(items)
                return
            }
            let single = try decoder.singleValueContainer()
            if single.decodeNil() { value = .null }
            else if let b = try? single.decode(Bool.self) { value = .bool(b) }
            else if let u = try? single.decode(UInt64.self) { value = .number(String(u)) }
            else if let i = try? single.decode(Int64.self) { value = .number(String(i)) }
            else if let d = try? single.decode(Double.self) { value = .number(d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) + ".0" : String(d)) }
            else { value = .string(try single.decode(String.self)) }
        }
    }

    // MARK: YAML

    static func yaml(_ input: [UInt8]) throws(PayloadError) -> PayloadValue {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { throw .syntax(format: "YAML", detail: "libyaml could not start (out of memory)") }
        defer { yaml_parser_delete(&parser) }
        var document = yaml_document_t()
        let loaded = input.withUnsafeBufferPointer { buf in
            yaml_parser_set_input_string(&parser, buf.baseAddress, buf.count)
            return yaml_parser_load(&parser, &document)
        }
        guard loaded == 1 else {
            let problem = parser.problem.map { String(cString: $0) } ?? "unreadable"
            let mark = parser.problem_mark
            throw .syntax(format: "YAML", detail: "line \(mark.line + 1), column \(mark.column + 1): \(problem)")
        }
        defer { yaml_document_delete(&document) }
        guard let root = yaml_document_get_root_node(&document) else {
            throw .shape("is empty")
        }
        var budget = maximumNodes
        return try node(root, in: &document, depth: 0, budget: &budget)
    }

    private static func node(_ n: UnsafeMutablePointer<yaml_node_t>, in document: inout yaml_document_t,
                             depth: Int, budget: inout Int) throws(PayloadError) -> PayloadValue {
        guard depth <= PayloadParser.maximumDepth else {
            throw .syntax(format: "YAML", detail: "nested deeper than \(PayloadParser.maximumDepth) levels")
        }
        budget -= 1
        guard budget >= 0 else { throw .syntax(format: "YAML", detail: "more than \(maximumNodes) values (aliases expanding?)") }
        func child(_ index: Int32) throws(PayloadError) -> PayloadValue {
            guard let c = yaml_document_get_node(&document, index) else { throw .syntax(format: "YAML", detail: "dangling node \(index)") }
            return try node(c, in: &document, depth: depth + 1, budget: &budget)
        }
        switch n.pointee.type {
        case YAML_SCALAR_NODE:
            let s = n.pointee.data.scalar
            let text = String(decoding: UnsafeBufferPointer(start: s.value, count: Int(s.length)), as: UTF8.self)
            guard s.style == YAML_PLAIN_SCALAR_STYLE else { return .string(text) }
            switch text {
            case "null", "~", "": return .null
            case "true": return .bool(true)
            case "false": return .bool(false)
            default: return .plain(text)
            }
        case YAML_SEQUENCE_NODE:
            var items: [PayloadValue] = []
            var item = n.pointee.data.sequence.items.start
            while let p = item, p != n.pointee.data.sequence.items.top {
                items.append(try child(p.pointee))
                item = p + 1
            }
            return .array(items)
        case YAML_MAPPING_NODE:
            var members: [(String, PayloadValue)] = []
            var pair = n.pointee.data.mapping.pairs.start
            while let p = pair, p != n.pointee.data.mapping.pairs.top {
                let key = try child(p.pointee.key)
                guard let name = key.text else { throw .shape("has a key that is not a string (\(key.kind))") }
                members.append((name, try child(p.pointee.value)))
                pair = p + 1
            }
            return .object(members)
        default:
            return .null
        }
    }
}
