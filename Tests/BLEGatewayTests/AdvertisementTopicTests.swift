import BLECore
import BLEGateway
import BLETestSupport
import Testing
import BLEWire

/// Advertisements of each known kind, from the virtual controller through a real mosquitto.
/// Advertising data bytes are AD structures as in Core Specification Supplement, Part A
/// (length, AD type, data); the formats decoded are the Battery Service (BAS 3.1), Apple's
/// iBeacon layout, Eddystone-URL and the Environmental Sensing characteristics (GSS 3.204,
/// 3.114: temperature sint16 in 0.01 °C, humidity uint16 in 0.01 %).
@Suite(.serialized) struct AdvertisementTopicTests {
    static func address(_ last: UInt8) -> LEAddress {
        LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_00 | UInt64(last)), type: .random)
    }

    /// Flags (LE General Discoverable, BR/EDR not supported); Complete Local Name "Therm";
    /// Service Data 0x180F = 0x5A (90 %).
    static let battery = SimulatedPeripheral(address: address(1), advertisingData:
        [0x02, 0x01, 0x06, 0x06, 0x09, 0x54, 0x68, 0x65, 0x72, 0x6D, 0x04, 0x16, 0x0F, 0x18, 0x5A], rssi: -60)
    /// Manufacturer data of company 0x004C: 0x02 0x15, UUID E2C56DB5-DFFB-48D2-B060-D0F5A71096E0,
    /// major 1, minor 2, measured power -59 dBm. Not connectable.
    static let iBeacon = SimulatedPeripheral(address: address(2), advertisingData:
        [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15,
         0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0,
         0x00, 0x01, 0x00, 0x02, 0xC5], isConnectable: false, rssi: -70)
    /// Complete list of 16-bit UUIDs: 0xFEAA; Service Data 0xFEAA: URL frame, TX -21 dBm,
    /// scheme "https://", "example", expansion 0x07 ".com".
    static let eddystone = SimulatedPeripheral(address: address(3), advertisingData:
        [0x03, 0x03, 0xAA, 0xFE, 0x0E, 0x16, 0xAA, 0xFE, 0x10, 0xEB, 0x03, 0x65, 0x78, 0x61, 0x6D, 0x70, 0x6C, 0x65, 0x07],
        isConnectable: false, rssi: -80)
    /// Service Data 0x2A6E = 0x0910 (23.20 °C), 0x2A6F = 0x1194 (45.00 %).
    static let environment = SimulatedPeripheral(address: address(4), advertisingData:
        [0x05, 0x16, 0x6E, 0x2A, 0x10, 0x09, 0x05, 0x16, 0x6F, 0x2A, 0x94, 0x11], rssi: -55)

    /// Extended advertising (Vol 4, Part E, 7.7.65.13: the report's TX_Power) from an advertiser
    /// whose data carries a TX Power Level (AD type 0x0A, Supplement Part A, 1.5) of -8 dBm:
    /// Flags; TX Power Level 0xF8; Complete Local Name "Tx". The report says -20 dBm.
    static let txPowerLevel = SimulatedPeripheral(address: address(5), advertisingData:
        [0x02, 0x01, 0x06, 0x02, 0x0A, 0xF8, 0x03, 0x09, 0x54, 0x78], usesExtendedAdvertising: true, txPower: -20, rssi: -65)
    /// No TX Power Level in the data (Flags; Complete Local Name "Rx"): the report's -12 dBm.
    static let reportTXPower = SimulatedPeripheral(address: address(6), advertisingData:
        [0x02, 0x01, 0x06, 0x03, 0x09, 0x52, 0x78], usesExtendedAdvertising: true, txPower: -12, rssi: -66)

    @Test func txPowerFromTheDataElseFromTheReport() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "#")
        var controller = GatewayBed.immediate
        controller.leFeatures.insert(.leExtendedAdvertising)
        let bed = try await GatewayBed(broker: broker, peripherals: [Self.txPowerLevel, Self.reportTXPower], controller: controller) { $0.layout = .both }
        let expected: [(String, String)] = [
            ("ble/gw/devices/C01122334405",
             #"{"address":"C0:11:22:33:44:05","addressType":"random","state":"present","name":"Tx","rssi":-65,"txPower":-8,"connectable":true}"#),
            ("ble/gw/devices/C01122334406",
             #"{"address":"C0:11:22:33:44:06","addressType":"random","state":"present","name":"Rx","rssi":-66,"txPower":-12,"connectable":true}"#),
            ("home/gw/BTtoMQTT/C01122334405", #"{"id":"C0:11:22:33:44:05","mac_type":1,"name":"Tx","rssi":-65,"txpower":-8}"#),
            ("home/gw/BTtoMQTT/C01122334406", #"{"id":"C0:11:22:33:44:06","mac_type":1,"name":"Rx","rssi":-66,"txpower":-12}"#),
        ]
        for (topic, payload) in expected {
            #expect(try await watcher.next(topic).text == payload)
        }
        await bed.stop()
        await watcher.stop()
    }

    @Test func eachKnownKindHasItsTopicAndPayload() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let bed = try await GatewayBed(broker: broker, peripherals: [Self.battery, Self.iBeacon, Self.eddystone, Self.environment])
        let t = GatewayTopics.bed
        let expected: [(String, String)] = [
            ("ble/gw/devices/C01122334401",
             #"{"address":"C0:11:22:33:44:01","addressType":"random","state":"present","name":"Therm","rssi":-60,"connectable":true,"serviceData":{"180F":"5A"},"decoded":{"battery":90}}"#),
            ("ble/gw/devices/C01122334402",
             #"{"address":"C0:11:22:33:44:02","addressType":"random","state":"present","rssi":-70,"connectable":false,"manufacturerData":{"004C":"0215E2C56DB5DFFB48D2B060D0F5A71096E000010002C5"},"decoded":{"ibeacon":{"uuid":"E2C56DB5-DFFB-48D2-B060-D0F5A71096E0","major":1,"minor":2,"txPower":-59}}}"#),
            ("ble/gw/devices/C01122334403",
             #"{"address":"C0:11:22:33:44:03","addressType":"random","state":"present","rssi":-80,"connectable":false,"services":["FEAA"],"serviceData":{"FEAA":"10EB036578616D706C6507"},"decoded":{"eddystone":{"frame":"url","txPower":-21,"url":"https://example.com"}}}"#),
            ("ble/gw/devices/C01122334404",
             #"{"address":"C0:11:22:33:44:04","addressType":"random","state":"present","rssi":-55,"connectable":true,"serviceData":{"2A6E":"1009","2A6F":"9411"},"decoded":{"temperature":23.2,"humidity":45}}"#),
        ]
        for (topic, payload) in expected {
            let m = try await watcher.next(topic)
            #expect(m.text == payload)
            #expect(m.retain == false)
        }
        #expect(t.device(Self.battery.address.address) == "ble/gw/devices/C01122334401")
        let online = try await watcher.next("ble/gw/status")
        #expect(online.text == "online")
        await bed.stop()
        await watcher.stop()
    }

    @Test func aDeviceThatGoesAwayGetsItsLostMessage() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "ble/#")
        let bed = try await GatewayBed(broker: broker, peripherals: [Self.battery]) { $0.scan.lostAfter = .milliseconds(500) }
        let topic = "ble/gw/devices/C01122334401"
        _ = try await watcher.next(topic) { $0.text.contains(#""state":"present""#) }
        bed.vc.removePeripheral(Self.battery.address)
        let lost = try await watcher.next(topic) { $0.text.contains(#""state":"lost""#) }
        #expect(lost.text == #"{"address":"C0:11:22:33:44:01","addressType":"random","state":"lost"}"#)
        await bed.stop()
        await watcher.stop()
    }

    @Test func openMQTTGatewayLayout() async throws {
        let broker = try await Broker.start()
        defer { broker.stop() }
        let watcher = try await Watcher.start(broker, "#")
        let bed = try await GatewayBed(broker: broker, peripherals: [Self.battery]) { $0.layout = .openmqttgateway }
        let m = try await watcher.next("home/gw/BTtoMQTT/C01122334401")
        #expect(m.text == #"{"id":"C0:11:22:33:44:01","mac_type":1,"name":"Therm","rssi":-60,"servicedata":"5a","servicedatauuid":"0x180f","batt":90}"#)
        await bed.stop()
        await watcher.stop()
    }
}
