import Foundation
import BLETestSupport
import BLEWire
import BLECore
import GATTClient

/// Connection parameters of the recorded sessions. Bumble's controller never answers LE Set
/// PHY, so a session that asked for 2M would hold the command queue for the PHY timeout, and
/// how long that lasts relative to the session would differ between recording and replay.
let sessionParameters: ConnectionRequestParameters = {
    var p = ConnectionRequestParameters()
    p.request2MPHY = false
    return p
}()

/// One heart-rate session, the same code for recording against the radio and for replay:
/// connect, MTU, full discovery, read Body Sensor Location, read the device information,
/// 10 notifications, a control-point write, disconnect.
struct HeartRateSession {
    struct Result: Equatable {
        var services: [BluetoothUUID]
        var characteristicCount: Int
        var bodySensorLocation: BodySensorLocation
        var manufacturer: String
        var beatsPerMinute: [UInt16]
        var disconnectReason: HCIStatus?
    }

    static let peer = LEAddress("F0:5E:B1:00:00:01", type: .random)!

    static func run(_ central: Central) async throws -> Result {
        let link = try await central.connect(peer, timeout: .seconds(10), parameters: sessionParameters)
        let peripheral = try await Peripheral(connection: link)
        let services = try await peripheral.services()
        var characteristicCount = 0
        for s in services { characteristicCount += try await peripheral.characteristics(of: s).count }
        let heartRate = ServiceIdentifier(uuid: "180D")
        let location = try await peripheral.read(CharacteristicIdentifier(uuid: "2A38", service: heartRate), as: BodySensorLocation.self)
        let manufacturer = try await peripheral.read(CharacteristicIdentifier(uuid: "2A29", service: ServiceIdentifier(uuid: "180A")), as: String.self)
        var bpm: [UInt16] = []
        // The subscription is kept until the control point write is answered, so the CCCD is
        // cleared after that write: the two requests go out in one order every time, as the
        // recording and the replay of it need.
        var readings: NotificationStream<HeartRateMeasurement>.Iterator? =
            try await peripheral.subscribe(to: CharacteristicIdentifier(uuid: "2A37", service: heartRate), as: HeartRateMeasurement.self).makeAsyncIterator()
        while bpm.count < 10, let reading = try await readings?.next() { bpm.append(reading.beatsPerMinute) }
        // Heart Rate Control Point: 0x01 resets Energy Expended (Heart Rate Service 3.3).
        try await peripheral.write([0x01], to: CharacteristicIdentifier(uuid: "2A39", service: heartRate), type: .withResponse)
        readings = nil
        try await link.disconnect()
        let reason = await link.lastDisconnectReason
        return Result(services: services.map(\.uuid), characteristicCount: characteristicCount, bodySensorLocation: location,
                      manufacturer: manufacturer, beatsPerMinute: bpm, disconnectReason: reason)
    }

    /// Fixtures/captures/recorded/NAME.
    static func capturePath(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/captures/recorded").appendingPathComponent(name).path
    }
}
