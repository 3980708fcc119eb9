/// Where and why a JSON text (RFC 8259) is malformed, for messages that point at the mistake.
/// A JSON decoder that says only "not valid JSON" runs this on the same bytes to tell the user
/// the offset and the reason.
///
///     JSONSyntax.firstError(in: Array("{\"a\": [1,]}".utf8))?.description
///     // "invalid value at offset 9"
///
/// Total on any bytes: containers are tracked on an explicit stack (no recursion), which grows
/// by one entry per opening bracket, so at most by the size of the input. Checks the grammar
/// and string escapes (a `\u` high surrogate must be followed by a low one); not UTF-8.
package enum JSONSyntax {
    /// The first mistake in `bytes`, or nil when they are one well-formed JSON value.
    package static func firstError(in bytes: [UInt8]) -> JSONSyntaxError? {
        var checker = Checker(bytes: bytes)
        do {
            try checker.run()
            return nil
        } catch {
            return error
        }
    }

    struct Checker {
        let bytes: [UInt8]
        var i = 0
        var stack: [UInt8] = []  // the closing bracket each open container waits for

        mutating func run() throws(JSONSyntaxError) {
            values: while true {
                while try value() {}
                while true {
                    skipWhitespace()
                    guard let close = stack.last else { break values }
                    guard i < bytes.count else { throw JSONSyntaxError(offset: i, reason: "unexpected end of the text (expected ',' or '\(Character(Unicode.Scalar(close)))')") }
                    if bytes[i] == close {
                        i += 1
                        stack.removeLast()
                    } else if bytes[i] == UInt8(ascii: ",") {
                        i += 1
                        if close == UInt8(ascii: "}") { try key() }
                        continue values
                    } else {
                        throw JSONSyntaxError(offset: i, reason: "expected ',' or '\(Character(Unicode.Scalar(close)))'")
                    }
                }
            }
            if i < bytes.count { throw JSONSyntaxError(offset: i, reason: "text after the JSON value") }
        }

        /// One value, or the opening of a container: then its closing bracket is pushed, its
        /// first member's key read, and the result is true (its first value comes next).
        mutating func value() throws(JSONSyntaxError) -> Bool {
            skipWhitespace()
            guard i < bytes.count else { throw JSONSyntaxError(offset: i, reason: "unexpected end of the text (expected a value)") }
            switch bytes[i] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = bytes[i] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                i += 1
                skipWhitespace()
                if i < bytes.count, bytes[i] == close {
                    i += 1
                    return false
                }
                stack.append(close)
                if close == UInt8(ascii: "}") { try key() }
                return true
            case UInt8(ascii: "\""):
                try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default:
                throw JSONSyntaxError(offset: i, reason: "invalid value")
            }
            return false
        }

        /// A member's name and its ':'.
        mutating func key() throws(JSONSyntaxError) {
            skipWhitespace()
            guard i < bytes.count else { throw JSONSyntaxError(offset: i, reason: "unexpected end of the text (expected a member name)") }
            guard bytes[i] == UInt8(ascii: "\"") else { throw JSONSyntaxError(offset: i, reason: "expected a member name in double quotes") }
            try string()
            skipWhitespace()
            guard i < bytes.count else { throw JSONSyntaxError(offset: i, reason: "unexpected end of the text (expected ':')") }
            guard bytes[i] == UInt8(ascii: ":") else { throw JSONSyntaxError(offset: i, reason: "expected ':' after the member name") }
            i += 1
        }

        mutating func string() throws(JSONSyntaxError) {
            let start = i
            i += 1
            while true {
                guard i < bytes.count else { throw JSONSyntaxError(offset: start, reason: "unterminated string") }
                let c = bytes[i]
                if c == UInt8(ascii: "\"") {
                    i += 1
                    return
                }
                if c < 0x20 { throw JSONSyntaxError(offset: i, reason: "control character 0x\(hexByte(c)) in a string (escape it)") }
                if c != UInt8(ascii: "\\") {
                    i += 1
                    continue
                }
                let escape = i
                guard i + 1 < bytes.count else { throw JSONSyntaxError(offset: start, reason: "unterminated string") }
                switch bytes[i + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    i += 2
                case UInt8(ascii: "u"):
                    let unit = try codeUnit(at: i)
                    i += 6
                    if (0xDC00...0xDFFF).contains(unit) {
                        throw JSONSyntaxError(offset: escape, reason: "low surrogate \\u\(hexUnit(unit)) without a high surrogate before it")
                    }
                    if (0xD800...0xDBFF).contains(unit) {
                        let next = i + 1 < bytes.count && bytes[i] == UInt8(ascii: "\\") && bytes[i + 1] == UInt8(ascii: "u") ? try codeUnit(at: i) : nil
                        guard let low = next, (0xDC00...0xDFFF).contains(low) else {
                            throw JSONSyntaxError(offset: escape, reason: "high surrogate \\u\(hexUnit(unit)) without a low surrogate after it")
                        }
                        i += 6
                    }
                default:
                    throw JSONSyntaxError(offset: escape, reason: "invalid escape in a string")
                }
            }
        }

        /// The four hex digits of the `\u` escape at `at`.
        func codeUnit(at: Int) throws(JSONSyntaxError) -> UInt16 {
            guard at + 6 <= bytes.count else { throw JSONSyntaxError(offset: at, reason: "\\u escape needs four hex digits") }
            var unit: UInt16 = 0
            for c in bytes[(at + 2)..<(at + 6)] {
                guard let digit = hexValue(c) else { throw JSONSyntaxError(offset: at, reason: "\\u escape needs four hex digits") }
                unit = unit << 4 | UInt16(digit)
            }
            return unit
        }

        mutating func number() throws(JSONSyntaxError) {
            let start = i
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { throw JSONSyntaxError(offset: start, reason: "invalid number (a digit must follow '-')") }
            if bytes[i] == UInt8(ascii: "0") {
                i += 1
                if i < bytes.count, isDigit(bytes[i]) { throw JSONSyntaxError(offset: start, reason: "invalid number (leading zero)") }
            } else {
                skipDigits()
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard i < bytes.count, isDigit(bytes[i]) else { throw JSONSyntaxError(offset: start, reason: "invalid number (a digit must follow '.')") }
                skipDigits()
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard i < bytes.count, isDigit(bytes[i]) else { throw JSONSyntaxError(offset: start, reason: "invalid number (a digit must follow the exponent)") }
                skipDigits()
            }
        }

        mutating func literal(_ word: String) throws(JSONSyntaxError) {
            let expected = word.utf8
            guard i + expected.count <= bytes.count, bytes[i..<(i + expected.count)].elementsEqual(expected) else {
                throw JSONSyntaxError(offset: i, reason: "invalid value")
            }
            i += expected.count
        }

        mutating func skipWhitespace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
        }

        mutating func skipDigits() {
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }

        func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

        func hexValue(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }

        func hexByte(_ c: UInt8) -> String { hex(UInt64(c), digits: 2) }
        func hexUnit(_ u: UInt16) -> String { hex(UInt64(u), digits: 4) }
        func hex(_ v: UInt64, digits: Int) -> String {
            let s = String(v, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, digits - s.count)) + s
        }
    }
}

/// A JSON syntax mistake: the byte offset (from 0) where it is and what is wrong there.
package struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset from the start of the text.
    package let offset: Int
    /// What is wrong, for example "invalid value" or "unterminated string".
    package let reason: String

    package init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    package var description: String { "\(reason) at offset \(offset)" }
}
