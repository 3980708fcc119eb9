import BLECore
import GATTServer
import SMP
import BLEWire

/// The lines `ble serve` prints, and the values it reads from stdin.
enum ServeOutput {
    /// One stdout line for a client's action; what came from the air is escaped.
    ///
    ///     read C0:00:00:00:00:01 2A19 handle 0x0003: 0x64 (1 byte, uint 100, "d")
    static func line(_ event: GATTServerActivity) -> String {
        func at(_ handle: UInt16) -> String { "handle 0x\(hex(handle, width: 4))" }
        switch event {
        case .connected(let peer):
            return "connected \(TerminalText.escape(peer))"
        case .disconnected(let peer):
            return "disconnected \(TerminalText.escape(peer))"
        case .read(let peer, let handle, let uuid, let offset, let value):
            let from = offset == 0 ? "" : " offset \(offset)"
            return "read \(TerminalText.escape(peer)) \(uuid) \(at(handle))\(from): \(ValueFormatter.text(value, uuid: uuid))"
        case .wrote(let peer, let handle, let uuid, let value):
            return "write \(TerminalText.escape(peer)) \(uuid) \(at(handle)): \(ValueFormatter.text(value, uuid: uuid))"
        case .subscribed(let peer, let characteristic, let valueHandle, let configuration):
            var kinds: [String] = []
            if configuration & 0x0001 != 0 { kinds.append("notifications") }
            if configuration & 0x0002 != 0 { kinds.append("indications") }
            return "subscribe \(TerminalText.escape(peer)) \(characteristic) \(at(valueHandle)): \(kinds.isEmpty ? "off" : kinds.joined(separator: ", "))"
        case .bondNotSaved(let peer, let error):
            return "bond not saved \(peer.address): \(error)"
        }
    }

    /// A stdin line as a value: `hex:` and hex digits, or the text as UTF-8; at most 512 octets.
    static func value(_ line: String) -> Result<[UInt8], ServeInputError> {
        let value: [UInt8]
        if line.hasPrefix("hex:") {
            guard let bytes = [UInt8](hex: String(line.dropFirst(4))) else { return .failure(ServeInputError("'\(TerminalText.escape(line))' is not hex:")) }
            value = bytes
        } else {
            value = Array(line.utf8)
        }
        guard value.count <= PayloadParser.maximumValueLength else {
            return .failure(ServeInputError("\(value.count) octets, more than the 512 a characteristic value can hold"))
        }
        return .success(value)
    }
}

/// Why a stdin line of `ble serve` was not sent.
struct ServeInputError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Cuts bytes into lines (LF, an optional CR before it dropped), each at most `limit` bytes:
/// a longer line is given as nil once and its bytes up to the next LF are skipped.
struct InputLines {
    let limit: Int
    private var pending: [UInt8] = []
    private var skipping = false

    init(limit: Int) { self.limit = limit }

    mutating func append(_ bytes: [UInt8]) -> [String?] {
        var out: [String?] = []
        for b in bytes {
            if b == 0x0A {
                if !skipping {
                    if pending.last == 0x0D { pending.removeLast() }
                    out.append(String(decoding: pending, as: UTF8.self))
                }
                pending.removeAll(keepingCapacity: true)
                skipping = false
            } else if !skipping {
                if pending.count == limit {
                    out.append(nil)
                    pending.removeAll(keepingCapacity: true)
                    skipping = true
                } else {
                    pending.append(b)
                }
            }
        }
        return out
    }
}

extension ServeOutput {
    /// The line for a central's pairing: `paired ADDRESS encrypted, ..., bonded` or
    /// `pairing failed ADDRESS: why`.
    static func pairing(_ peer: LEAddress, _ result: Result<Bond, PairingError>) -> String {
        switch result {
        case .success(let bond):
            let level = BondsCommand.level(authenticated: bond.longTermKey?.authenticated == true, secureConnections: bond.longTermKey?.secureConnections == true)
            return "paired \(peer.address) \(level)\(bond.longTermKey != nil ? ", bonded" : "")"
        case .failure(let error):
            return "pairing failed \(peer.address): \(error)"
        }
    }
}
