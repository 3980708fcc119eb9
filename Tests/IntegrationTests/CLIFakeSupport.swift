import BLETestSupport
import Foundation
import GATTClient
import BLEWire
import BLECore

/// The `ble` executable against BLETestSupport's `FakeCentral`: the fake's in-process virtual
/// controller is served on a pseudo-terminal and `ble` opens it with `-d serial:/dev/pts/N`,
/// so everything in the tool above HCI (transport, host, central, ATT, GATT, the command
/// code) runs as it does on a real adapter, while the test scripts the peers
/// (`FakePeripheral`s) from here. For behaviour that needs an independent peer (pairing, LE
/// credit-based channels, a real GATT server) the tests use the Bumble virtual radio instead.
struct FakeRadio {
    let fake: FakeCentral

    /// A controller with `peripherals` advertising.
    init(_ peripherals: [FakePeripheral]) {
        fake = FakeCentral(queue: AdapterExecutor(label: "ble-cli-fake"))
        for p in peripherals { fake.add(p) }
    }

    /// Closes the controller's pseudo-terminal (each one otherwise stays open, with the
    /// controller behind it, for as long as the test process runs).
    ///
    ///     let radio = FakeRadio([FakePeers.lab()])
    ///     defer { radio.close() }
    func close() { fake.controller.closeTransport() }

    /// `ble -d <the fake> arguments`. Each run gets a pseudo-terminal of its own: the
    /// controller starts from reset, as a replugged adapter does, so nothing one run left
    /// behind in the line reaches the next.
    func run(_ arguments: [String], timeout: Double = 60) async throws -> BLETool.Run {
        try await BLETool.run(["-d", try fake.servePseudoTerminal()] + arguments, timeout: timeout)
    }

    /// Starts `ble -d <the fake> arguments` and returns at once, for a test that scripts the
    /// peers while the tool runs. The controller is reset before this returns, so a wait for
    /// a subscriber that follows sees only this run's link.
    func launch(_ arguments: [String], timeout: Double = 60) throws -> Task<BLETool.Run, any Error> {
        let spec = try fake.servePseudoTerminal()
        return Task { try await BLETool.run(["-d", spec] + arguments, timeout: timeout) }
    }

    /// `ble -d <the fake> arguments`, interrupted once its stdout satisfies `ready`.
    func interrupt(_ arguments: [String], when ready: @escaping (String) -> Bool) async throws -> BLETool.Run {
        try await BLETool.interrupt(["-d", try fake.servePseudoTerminal()] + arguments, when: ready)
    }
}

/// The peers of the Bumble scenarios (Fixtures/peers/scenarios), as fakes with the same
/// addresses, names and GATT databases (BLETestSupport's presets mirror the scenario files).
enum FakePeers {
    static let heartRate = ServiceIdentifier(uuid: "180D")
    static let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRate)
    static let controlPoint = CharacteristicIdentifier(uuid: "2A39", service: heartRate)
    static let labService = ServiceIdentifier(uuid: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
    static let labCounter = CharacteristicIdentifier(uuid: "6E400004-B5A3-F393-E0A9-E50E24DCCA9E", service: labService)

    static func address(_ text: String) -> LEAddress {
        LEAddress(BluetoothAddress(text) ?? BluetoothAddress(rawValue: 0), type: .random)
    }

    /// heart-rate.json's "Polar H10 sim" at F0:5E:B1:00:00:01 (Appearance 833), advertising
    /// Heart Rate (180D) only, as the scenario does: Battery (180F) is in its database, not
    /// in its advertisement.
    static func heartRateMonitor() -> FakePeripheral {
        let advertisement = AdvertisingData([.flags([.leGeneralDiscoverable, .brEDRNotSupported]), .completeServiceUUIDs16([0x180D]),
                                             .appearance(833), .completeLocalName("Polar H10 sim")])
        return FakePeripheral(name: "Polar H10 sim", address: address("F0:5E:B1:00:00:01"), advertisement: advertisement,
                              database: .heartRateMonitor())
    }

    /// lab.json's "Lab sim" at F0:5E:B1:00:00:02, advertising its 128-bit service and name.
    static func lab() -> FakePeripheral {
        FakePeripheral(name: "Lab sim", address: address("F0:5E:B1:00:00:02"), database: .lab())
    }

    /// all.json's "Battery sim" at F0:5E:B1:00:00:03, advertising Battery (180F).
    static func battery() -> FakePeripheral {
        FakePeripheral(name: "Battery sim", address: address("F0:5E:B1:00:00:03"), services: [
            .init(uuid: BluetoothUUID(uuid16: 0x180F), characteristics: [
                .init(uuid: BluetoothUUID(uuid16: 0x2A19), properties: [.read, .notify], value: [0x64]),
            ]),
        ])
    }
}
