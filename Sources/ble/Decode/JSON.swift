import BLECore

/// `ble`'s JSON output is BLECore's `JSONValue`: one writer for the tool and the gateway.
typealias JSON = JSONValue

extension JSONValue {
    static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
}
