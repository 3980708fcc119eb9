import Dispatch
import Synchronization
import GATTClient
import BLEWire
import BLECore
import ATT
import GATTServer
import BLESeed

/// A peripheral for `FakeCentral`: a name, what it advertises and its GATT database, declared
/// the way an application names things. Once added to a fake central it advertises, accepts
/// connections and serves its database through the in-process virtual controller, and the
/// test scripts it from here: values, notifications, failing reads and writes.
///
///     let hrm = FakePeripheral(name: "HRM", services: [
///         .init(heartRate, characteristics: [.init(measurement, properties: [.notify])])])
///     fakeCentral.add(hrm)
///     try await hrm.simulateNotification(HeartRateMeasurement(beatsPerMinute: 72), for: measurement)
public final class FakePeripheral: Sendable {
    public let name: String?
    public let address: LEAddress
    /// The advertising data (by default: flags, the services' 16-bit UUIDs, the name).
    public let advertisement: AdvertisingData
    public let database: GATTDatabase
    public let rssi: Int8
    public let isConnectable: Bool
    private let attachment = Mutex<(server: ScriptedATTServer, controller: VirtualController)?>(nil)

    /// The identifier a scan reports for this peripheral.
    public var identifier: PeripheralIdentifier { PeripheralIdentifier(address: address) }

    /// A peripheral with `services`; `advertisement` nil advertises the flags, the services'
    /// UUIDs and `name`.
    public convenience init(name: String? = nil,
                address: LEAddress = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_01), type: .random),
                advertisement: AdvertisingData? = nil, services: [GATTDatabase.Service] = [],
                rssi: Int8 = -50, isConnectable: Bool = true) {
        self.init(name: name, address: address, advertisement: advertisement,
                  database: GATTDatabase(services: services, deviceName: name), rssi: rssi, isConnectable: isConnectable)
    }

    /// A peripheral serving `database` as given (its Generic Access service, Appearance
    /// included, comes from the database's `deviceName` and `appearance`); `advertisement`
    /// nil advertises the flags, the database's service UUIDs and `name`.
    ///
    ///     let hrm = FakePeripheral(name: "Polar H10 sim", database: .heartRateMonitor())
    public init(name: String?, address: LEAddress = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_01), type: .random),
                advertisement: AdvertisingData? = nil, database: GATTDatabase,
                rssi: Int8 = -50, isConnectable: Bool = true) {
        self.name = name
        self.address = address
        self.database = database
        self.advertisement = advertisement ?? FakePeripheral.defaultAdvertisement(name: name, services: database.services.map(\.uuid))
        self.rssi = rssi
        self.isConnectable = isConnectable
    }

    static func defaultAdvertisement(name: String?, services: [BluetoothUUID]) -> AdvertisingData {
        var structures: [ADStructure] = [.flags([.leGeneralDiscoverable, .brEDRNotSupported])]
        let short = services.compactMap(\.uuid16)
        if !short.isEmpty { structures.append(.completeServiceUUIDs16(short)) }
        let long = services.filter { $0.uuid16 == nil }.map(\.value)
        if !long.isEmpty { structures.append(.completeServiceUUIDs128(long)) }
        if let name { structures.append(.completeLocalName(name)) }
        return AdvertisingData(structures)
    }

    /// Builds the server on the controller's queue; called by `FakeCentral.add`.
    func attach(to controller: VirtualController) -> ScriptedATTServer {
        attachment.withLock { current in
            if let current { return current.server }
            let server = ScriptedATTServer(server: GATTServer(database: database, queue: controller.queue))
            current = (server, controller)
            return server
        }
    }

    func server() throws(FakeError) -> ScriptedATTServer {
        guard let attached = attachment.withLock({ $0 }) else { throw .notAdded(name ?? "\(address)") }
        return attached.server
    }

    /// Waits until a central has enabled notifications or indications of `characteristic`
    /// (written its Client Characteristic Configuration). `simulateNotification` and
    /// `simulateIndication` wait the same way; call this to know the app has subscribed
    /// (for example before checking what it shows).
    ///
    ///     try await hrm.waitForSubscriber(to: measurement)
    public func waitForSubscriber(to characteristic: CharacteristicIdentifier, timeout: Duration = .seconds(5)) async throws(FakeError) {
        guard let (scripted, controller) = attachment.withLock({ $0 }) else { throw .notAdded(name ?? "\(address)") }
        let server = scripted.server
        guard await server.valueHandle(of: characteristic.uuid) != nil else { throw .noCharacteristic(characteristic.uuid) }
        do {
            try await controller.waitUntil("a subscriber to \(characteristic)", timeout: timeout) { _ in
                server.hasSubscriberOnQueue(characteristic.uuid)
            }
        } catch {
            throw .timedOut("a central to subscribe to \(characteristic)", error)
        }
    }

    /// Notifies `value` to every central that enabled notifications of `characteristic`;
    /// returns how many it went to (at least one). A notification is never sent into the void:
    /// until a central has written the Client Characteristic Configuration this waits, as
    /// `waitForSubscriber(to:timeout:)` does, and throws `FakeError.timedOut` when none has
    /// after `subscriberTimeout`.
    ///
    ///     let levels = try await peripheral.subscribe(to: level)   // the app's side
    ///     try await battery.simulateNotification(BatteryLevel(percent: 90), for: level)
    @discardableResult
    public func simulateNotification(_ value: some GATTEncodable, for characteristic: CharacteristicIdentifier,
                                     subscriberTimeout: Duration = .seconds(5)) async throws(FakeError) -> Int {
        try await waitForSubscriber(to: characteristic, timeout: subscriberTimeout)
        return try await server().server.notify(characteristic: characteristic.uuid, value: value.gattValue)
    }

    /// Indicates `value` to every central that enabled indications of `characteristic` and
    /// waits for the confirmations; returns how many confirmed. Like `simulateNotification`,
    /// it first waits up to `subscriberTimeout` for a subscriber (`FakeError.timedOut` without one).
    @discardableResult
    public func simulateIndication(_ value: some GATTEncodable, for characteristic: CharacteristicIdentifier,
                                   subscriberTimeout: Duration = .seconds(5)) async throws(FakeError) -> Int {
        try await waitForSubscriber(to: characteristic, timeout: subscriberTimeout)
        return try await server().server.indicate(characteristic: characteristic.uuid, value: value.gattValue)
    }

    /// Sets the value the next read of `characteristic` returns.
    public func setValue(_ value: some GATTEncodable, for characteristic: CharacteristicIdentifier) async throws(FakeError) {
        guard try await server().server.setValue(value.gattValue, of: characteristic.uuid) else { throw .noCharacteristic(characteristic.uuid) }
    }

    /// The current value of `characteristic` (its first value, or the last write or notification).
    public func value(of characteristic: CharacteristicIdentifier) async throws(FakeError) -> [UInt8] {
        guard let value = try await server().server.value(of: characteristic.uuid) else { throw .noCharacteristic(characteristic.uuid) }
        return value
    }

    /// Reads of `characteristic` fail with `error` (nil: answer them again).
    public func failReads(of characteristic: CharacteristicIdentifier, with error: ATTErrorCode?) async throws(FakeError) {
        let scripted = try server()
        guard let handle = await scripted.server.valueHandle(of: characteristic.uuid) else { throw .noCharacteristic(characteristic.uuid) }
        scripted.update { $0.readErrors[handle] = error }
    }

    /// Write Requests to `characteristic` are answered by `answer`: nil applies the write and
    /// answers with a Write Response, an error code answers with that ATT error (the value is
    /// then not written).
    ///
    ///     try await hrm.answerWrites(to: controlPoint) { $0 == [0x01] ? nil : ATTErrorCode(0x80) }
    public func answerWrites(to characteristic: CharacteristicIdentifier,
                             _ answer: @escaping @Sendable ([UInt8]) -> ATTErrorCode?) async throws(FakeError) {
        let scripted = try server()
        guard let handle = await scripted.server.valueHandle(of: characteristic.uuid) else { throw .noCharacteristic(characteristic.uuid) }
        scripted.update { $0.writeAnswers[handle] = answer }
    }

    /// Every value written to `characteristic` so far, oldest first.
    public func writes(to characteristic: CharacteristicIdentifier) async throws(FakeError) -> [[UInt8]] {
        let server = try server().server
        guard let handle = await server.valueHandle(of: characteristic.uuid) else { throw .noCharacteristic(characteristic.uuid) }
        return await server.appliedWrites().filter { $0.handle == handle }.map(\.value)
    }
}

/// A scripting call on a fake that cannot be done.
public enum FakeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The peripheral was not added to a `FakeCentral`.
    case notAdded(String)
    /// The peripheral's database has no characteristic with this UUID.
    case noCharacteristic(BluetoothUUID)
    /// The peripheral is not connected.
    case notConnected(LEAddress)
    /// A wait ended without what it waited for.
    case timedOut(String, VirtualControllerError)

    public var description: String {
        switch self {
        case .notAdded(let name): return "fake peripheral \(name) is not added to a FakeCentral; call fakeCentral.add(peripheral) first"
        case .noCharacteristic(let uuid): return "the fake peripheral's database has no characteristic \(uuid.gattDisplayName); declare it in its services"
        case .notConnected(let peer): return "fake peripheral \(peer) is not connected; connect to it before simulating a disconnect"
        case .timedOut(let what, let error): return "waited for \(what): \(error)"
        }
    }
}
