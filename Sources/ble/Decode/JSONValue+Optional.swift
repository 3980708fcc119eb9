import BLEWire

extension JSONValue {
    /// A string, or `null` when there is none.
    static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
}
