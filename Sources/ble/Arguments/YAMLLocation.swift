import CYAML

/// The line of a YAML file where a key path such as `services[0].characteristics[1].properties`
/// is, for error messages: the line of the node the path names, or of the nearest node on the
/// way that exists (a missing key is reported at the mapping that lacks it). The file was read
/// whole and bounded before (`PayloadFile`); the walk takes one step per path component.
///
///     YAMLLocation.line(of: "services[0].uuid", in: bytes)   // 3
enum YAMLLocation {
    enum Component: Equatable {
        case key(String)
        case index(Int)
    }

    static func line(of path: String, in input: [UInt8]) -> Int? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return nil }
        defer { yaml_parser_delete(&parser) }
        var document = yaml_document_t()
        let loaded = input.withUnsafeBufferPointer { buf in
            yaml_parser_set_input_string(&parser, buf.baseAddress, buf.count)
            return yaml_parser_load(&parser, &document)
        }
        guard loaded == 1 else { return nil }
        defer { yaml_document_delete(&document) }
        guard var node = yaml_document_get_root_node(&document) else { return nil }
        for component in components(path) {
            guard let next = child(of: node, component, in: &document) else { break }
            node = next
        }
        return Int(node.pointee.start_mark.line) + 1
    }

    /// "services[0].uuid" as [.key("services"), .index(0), .key("uuid")].
    static func components(_ path: String) -> [Component] {
        var out: [Component] = []
        for part in path.split(separator: ".") {
            var rest = Substring(part)
            if let bracket = rest.firstIndex(of: "[") {
                if bracket != rest.startIndex { out.append(.key(String(rest[..<bracket]))) }
                rest = rest[bracket...]
                while rest.first == "[", let close = rest.firstIndex(of: "]"), let i = Int(rest[rest.index(after: rest.startIndex)..<close]) {
                    out.append(.index(i))
                    rest = rest[rest.index(after: close)...]
                }
            } else {
                out.append(.key(String(rest)))
            }
        }
        return out
    }

    private static func child(of node: UnsafeMutablePointer<yaml_node_t>, _ component: Component,
                              in document: inout yaml_document_t) -> UnsafeMutablePointer<yaml_node_t>? {
        switch (node.pointee.type, component) {
        case (YAML_MAPPING_NODE, .key(let name)):
            var pair = node.pointee.data.mapping.pairs.start
            while let p = pair, p != node.pointee.data.mapping.pairs.top {
                if let key = yaml_document_get_node(&document, p.pointee.key), key.pointee.type == YAML_SCALAR_NODE {
                    let s = key.pointee.data.scalar
                    if String(decoding: UnsafeBufferPointer(start: s.value, count: Int(s.length)), as: UTF8.self) == name {
                        return yaml_document_get_node(&document, p.pointee.value)
                    }
                }
                pair = p + 1
            }
            return nil
        case (YAML_SEQUENCE_NODE, .index(let i)):
            let items = node.pointee.data.sequence.items
            guard i >= 0, let start = items.start, let top = items.top, i < top - start else { return nil }
            return yaml_document_get_node(&document, start[i])
        default:
            return nil
        }
    }
}
