import GATTClient
import BLEWire
import ATT
import GATTServer

extension GATTDatabase {
    /// The heart-rate monitor of Fixtures/peers/scenarios/heart-rate.json: Heart Rate
    /// (0x180D: Measurement notify, Body Sensor Location = chest, Control Point accepting
    /// only 0x01, else application error 0x80), Battery (0x180F: level 100, read and notify)
    /// and Device Information (0x180A) with the scenario's strings and PnP ID.
    public static func heartRateMonitor() -> GATTDatabase {
        func u(_ s: UInt16) -> BluetoothUUID { BluetoothUUID(uuid16: s) }
        return GATTDatabase(services: [
            Service(uuid: u(0x180D), characteristics: [
                Characteristic(uuid: u(0x2A37), properties: [.notify], permissions: []),
                Characteristic(uuid: u(0x2A38), properties: [.read], value: [0x01]),
                Characteristic(uuid: u(0x2A39), properties: [.write], permissions: [.write], value: [],
                               acceptedWrites: [[0x01]], rejectWith: ATTErrorCode(0x80)),
            ]),
            Service(uuid: u(0x180F), characteristics: [
                Characteristic(uuid: u(0x2A19), properties: [.read, .notify], value: [0x64]),
            ]),
            Service(uuid: u(0x180A), characteristics: [
                Characteristic(uuid: u(0x2A29), properties: [.read], value: Array("Virtual Sensors".utf8)),
                Characteristic(uuid: u(0x2A24), properties: [.read], value: Array("HRM-1".utf8)),
                Characteristic(uuid: u(0x2A25), properties: [.read], value: Array("SN-000042".utf8)),
                Characteristic(uuid: u(0x2A26), properties: [.read], value: Array("1.2.3".utf8)),
                Characteristic(uuid: u(0x2A50), properties: [.read], value: [0x01, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x01]),
            ]),
        ], deviceName: "Polar H10 sim", appearance: 833)
    }

    /// The 128-bit lab service 6E400001-B5A3-F393-E0A9-E50E24DCCA9E of
    /// Fixtures/peers/scenarios/lab.json, each characteristic with its user description:
    /// ...0002 a 600-byte pattern (byte i = i & 0xFF), ...0003 a 512-byte writable scratch,
    /// ...0004 indicate-only counter, ...0005 "secret" readable only when encrypted,
    /// ...0006 a 4-byte notifying counter.
    public static func lab() -> GATTDatabase {
        func lab(_ n: UInt128) -> BluetoothUUID { BluetoothUUID(uuid128: 0x6E40_0000_B5A3_F393_E0A9_E50E24DCCA9E | n << 96) }
        return GATTDatabase(services: [
            Service(uuid: lab(1), characteristics: [
                Characteristic(uuid: lab(2), properties: [.read], value: (0..<600).map { UInt8(truncatingIfNeeded: $0) },
                               descriptors: [.userDescription("600-byte pattern, byte i = i & 0xFF")], maximumLength: 600),
                Characteristic(uuid: lab(3), properties: [.read, .write, .writeWithoutResponse], value: [UInt8](repeating: 0, count: 512),
                               descriptors: [.userDescription("512-byte scratch")]),
                Characteristic(uuid: lab(4), properties: [.indicate], permissions: [],
                               descriptors: [.userDescription("Counter (indications)")]),
                Characteristic(uuid: lab(5), properties: [.read], permissions: [.read, .readEncrypted], value: Array("secret".utf8),
                               descriptors: [.userDescription("Needs encryption")]),
                Characteristic(uuid: lab(6), properties: [.notify, .read], value: [0, 0, 0, 0],
                               descriptors: [.userDescription("Counter (notifications)")]),
            ]),
        ], deviceName: "Lab sim")
    }
}
