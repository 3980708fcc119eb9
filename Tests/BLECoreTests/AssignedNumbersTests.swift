import Testing
@testable import BLECore
@testable import BLETransport
@testable import BLEWire

/// Values from the Bluetooth SIG Assigned Numbers document.
@Suite struct AssignedNumbersTests {
    @Test func companies() {
        #expect(AssignedNumbers.companyName(0x004C) == "Apple, Inc.")        // 7.1
        #expect(AssignedNumbers.companyName(0x0000) == "Ericsson AB")
        #expect(AssignedNumbers.companyName(0x0059) == "Nordic Semiconductor ASA")
        #expect(AssignedNumbers.companyName(0xFFFE) == nil)
    }

    @Test func uuidNames() {
        #expect(AssignedNumbers.name(for: BluetoothUUID(uuid16: 0x180D)) == "Heart Rate")                            // 3.4
        #expect(AssignedNumbers.name(for: BluetoothUUID(uuid16: 0x2A37)) == "Heart Rate Measurement")                // 3.8
        #expect(AssignedNumbers.name(for: BluetoothUUID(uuid16: 0x2902)) == "Client Characteristic Configuration")   // 3.7
        #expect(AssignedNumbers.name(for: BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB")!) == "Heart Rate")
        #expect(AssignedNumbers.serviceName(BluetoothUUID(uuid16: 0x180F)) == "Battery Service")
        #expect(AssignedNumbers.characteristicName(BluetoothUUID(uuid16: 0x180F)) == nil)
        #expect(AssignedNumbers.characteristicName(BluetoothUUID(uuid16: 0x2A19)) == "Battery Level")
        #expect(AssignedNumbers.descriptorName(BluetoothUUID(uuid16: 0x2901)) == "Characteristic User Descriptor")
        #expect(AssignedNumbers.name(for: BluetoothUUID(uuid16: 0xFFFF)) == nil)
    }

    @Test func memberServiceUUIDs() {
        // 3.11 Member UUIDs: 0xFEAA Google (Eddystone), 0xFEFF GN Netcom, 0xFEED Tile.
        #expect(AssignedNumbers.name(for: BluetoothUUID(uuid16: 0xFEFF)) == "GN Netcom")
        #expect(AssignedNumbers.name(for: BluetoothUUID(uuid16: 0xFEED))?.hasPrefix("Tile") == true)
    }

    @Test func appearances() {
        // 2.6: category 0x00D Heart Rate Sensor, subcategory 0x01 Heart Rate Belt.
        #expect(AssignedNumbers.appearanceName(0x0341) == "Heart Rate Sensor: Heart Rate Belt")
        #expect(AssignedNumbers.appearanceName(0x0340) == "Heart Rate Sensor")
        #expect(AssignedNumbers.appearanceName(0x0180) == "Remote Control")
        #expect(AssignedNumbers.appearanceName(0x03C1) == "Human Interface Device: Keyboard")
        #expect(AssignedNumbers.appearanceName(0x0343) == "Heart Rate Sensor: subcategory 3")
        #expect(AssignedNumbers.appearanceName(0xFFC0) == nil)
    }

    @Test func tablesAreSortedForBinarySearch() {
        #expect(zip(CompanyIdentifiers.ids, CompanyIdentifiers.ids.dropFirst()).allSatisfy { $0 < $1 })
        #expect(CompanyIdentifiers.ids.count == CompanyIdentifiers.names.count)
        #expect(zip(AssignedUUIDNames.values, AssignedUUIDNames.values.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(AssignedUUIDNames.values.count == AssignedUUIDNames.names.count)
        #expect(AssignedUUIDNames.values.count == AssignedUUIDNames.kinds.count)
        #expect(zip(AppearanceNames.values, AppearanceNames.values.dropFirst()).allSatisfy { $0 < $1 })
        #expect(AppearanceNames.values.count == AppearanceNames.names.count)
    }
}
