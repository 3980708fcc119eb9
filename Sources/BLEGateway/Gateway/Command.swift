import BLECore
import FoundationEssentials
import GATTClient
import BLEWire

/// A command received on `ble/GWID/commands`:
/// `{"id":"42","command":"read","address":"C0:11:22:33:44:55","addressType":"random","service":"180F","characteristic":"2A19"}`.
/// `write` adds `"value":"HEX"` (and `"withoutResponse":true` for a Write Command);
/// `scan` takes `"enabled":true|false`.
public struct GatewayCommand: Sendable, Hashable {
    public enum Kind: String, Sendable, CaseIterable {
        case connect, disconnect, read, write, subscribe, unsubscribe, scan
    }

    public var id: String
    public var kind: Kind
    public var address: LEAddress?
    public var characteristic: GatewayConfig.CharacteristicRef?
    public var value: [UInt8]?
    public var withoutResponse = false
    public var enabled: Bool?

    private struct Wire: Decodable {
        var id: String?
        var command: String?
        var address: String?
        var addressType: String?
        var service: String?
        var characteristic: String?
        var value: String?
        var withoutResponse: Bool?
        var enabled: Bool?
    }

    /// Decodes a command message. Throws with the correlation id when there is one (the
    /// answer goes to `responses/<id>`; "_" when the message has none).
    public static func decode(_ payload: [UInt8]) -> Result<GatewayCommand, RejectedCommand> {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(payload))
        } catch {
            return .failure(RejectedCommand(id: "_", error: .bad("the command is not a JSON object with string \"id\" and \"command\": \(error)")))
        }
        guard let id = wire.id, !id.isEmpty, !id.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" }) else {
            return .failure(RejectedCommand(id: "_", error: .bad("the command needs an \"id\" usable as a topic level (no '/', '+', '#')")))
        }
        func fail(_ message: String) -> Result<GatewayCommand, RejectedCommand> { .failure(RejectedCommand(id: id, error: .bad(message))) }
        guard let name = wire.command, let kind = Kind(rawValue: name) else {
            return .failure(RejectedCommand(id: id, error: CommandError("unknownCommand", "\"\(wire.command ?? "")\" is not one of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")))
        }
        var command = GatewayCommand(id: id, kind: kind)
        if kind == .scan {
            guard let enabled = wire.enabled else { return fail("scan needs \"enabled\": true or false") }
            command.enabled = enabled
            return .success(command)
        }
        guard let text = wire.address else { return fail("\(name) needs \"address\"") }
        let type: LEAddressType = wire.addressType == "public" ? .public : .random
        if let t = wire.addressType, t != "public", t != "random" { return fail("\"addressType\" must be public or random, got \"\(t)\"") }
        guard let address = LEAddress(text, type: type) else { return fail("\"\(text)\" is not an address like C0:11:22:33:44:55") }
        command.address = address
        if [.read, .write, .subscribe, .unsubscribe].contains(kind) {
            guard let s = wire.service, let service = BluetoothUUID(s) else { return fail("\(name) needs \"service\" as a UUID") }
            guard let c = wire.characteristic, let characteristic = BluetoothUUID(c) else { return fail("\(name) needs \"characteristic\" as a UUID") }
            command.characteristic = GatewayConfig.CharacteristicRef(service: service, characteristic: characteristic)
        }
        if kind == .write {
            guard let hex = wire.value, let bytes = bytes(fromHex: hex) else { return fail("write needs \"value\" as hex bytes") }
            command.value = bytes
            command.withoutResponse = wire.withoutResponse ?? false
        }
        return .success(command)
    }

    init(id: String, kind: Kind) {
        self.id = id
        self.kind = kind
    }
}

/// A command that could not be decoded, with the id its answer goes to.
public struct RejectedCommand: Error, Sendable, Hashable {
    public var id: String
    public var error: CommandError
}
