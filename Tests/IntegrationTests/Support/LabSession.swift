import BLETestSupport
import BLEWire
import BLECore
import GATTClient

/// A session with the lab device (Fixtures/peers/scenarios/lab.json), the same code for
/// recording and replay: connect, MTU, full discovery, a 600-byte long read,
/// a 512-byte long write read back, three indications, disconnect.
struct LabSession {
    struct Result: Equatable {
        var found: LEAddress
        var serviceCount: Int
        var longValue: [UInt8]
        var writtenBack: [UInt8]
        var indications: Int
    }

    static let service = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
    /// The value written: byte i = 255 - (i & 0xFF).
    static let written: [UInt8] = (0..<512).map { 255 - UInt8($0 & 0xFF) }

    static func run(_ central: Central) async throws -> Result {
        // Connecting by address: a scan that stops as the connection starts would race the
        // stop against LE Create Connection, and replay needs one order.
        let address = LEAddress("F0:5E:B1:00:00:02", type: .random)!
        let link = try await central.connect(address, timeout: .seconds(10), parameters: sessionParameters)
        let peripheral = try await Peripheral(connection: link)
        let services = try await peripheral.services()
        for s in services { _ = try await peripheral.characteristics(of: s) }
        let lab = try ServiceIdentifier(uuid: service)
        let long = try await peripheral.read(CharacteristicIdentifier(uuid: "6E400002-B5A3-F393-E0A9-E50E24DCCA9E", service: lab))
        let writable = CharacteristicIdentifier(uuid: "6E400003-B5A3-F393-E0A9-E50E24DCCA9E", service: lab)
        try await peripheral.write(written, to: writable, type: .withResponse)
        let back = try await peripheral.read(writable)
        var indications = 0
        for try await _ in try await peripheral.subscribe(to: CharacteristicIdentifier(uuid: "6E400004-B5A3-F393-E0A9-E50E24DCCA9E", service: lab), indications: true) {
            indications += 1
            if indications == 3 { break }
        }
        try await link.disconnect()
        return Result(found: address, serviceCount: services.count, longValue: long, writtenBack: back, indications: indications)
    }
}
