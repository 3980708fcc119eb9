import BLECore
import BLESensors
import Foundation
import Testing
import BLEWire

/// The advertisements of Fixtures/sensors/brands.tsv by name, and checks of what a format makes
/// of them. Expected values in the suites come from the reference decoders' own test suites or
/// the formats' documentation (Fixtures/README.md, "Sensor formats: brands").
enum BrandFixtures {
    static let address = LEAddress(BluetoothAddress(rawValue: 0xAABB_CCDD_EEFF), type: .public)

    static let all: [(name: String, ad: SensorAdvertisement)] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/sensors/brands.tsv")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            let f = line.split(separator: "\t").map(String.init)
            guard f.count == 3, let data = [UInt8](hex: f[1]) else { return nil }
            let response = f[2] == "-" ? [] : [UInt8](hex: f[2]) ?? []
            return (f[0], SensorAdvertisement(address: address, data: AdvertisingData(bytes: data), scanResponse: AdvertisingData(bytes: response)))
        }
    }()

    static func ad(_ name: String) throws -> SensorAdvertisement {
        try #require(all.first { $0.name == name }?.ad, "no fixture \(name) in Fixtures/sensors/brands.tsv")
    }

    /// An advertisement with one manufacturer data structure (and optionally a name and a
    /// 16-bit service UUID), for hostile variants of the fixtures.
    static func manufacturer(_ companyID: UInt16, _ data: [UInt8], name: String? = nil, uuid16: UInt16? = nil) -> SensorAdvertisement {
        var s: [ADStructure] = [.manufacturerSpecificData(companyID: companyID, data: data)]
        if let name { s.append(.completeLocalName(name)) }
        if let uuid16 { s.append(.completeServiceUUIDs16([uuid16])) }
        return SensorAdvertisement(address: address, data: AdvertisingData(s))
    }

    /// An advertisement with one 16-bit service data structure.
    static func service(_ uuid16: UInt16, _ data: [UInt8]) -> SensorAdvertisement {
        SensorAdvertisement(address: address, data: AdvertisingData([.serviceData16(uuid: uuid16, data: data)]))
    }
}

/// Decodes fixture `name` with `format` and checks brand, model, the values in order and the packet id.
func expectReading(_ format: any SensorFormat.Type, _ name: String, brand: String, model: String?,
                   _ expected: [(String, JSONValue)], packetID: UInt64? = nil,
                   sourceLocation: SourceLocation = #_sourceLocation) throws {
    let reading = try #require(try format.decode(try BrandFixtures.ad(name), keys: SensorKeys()), "\(name) not decoded", sourceLocation: sourceLocation)
    #expect(reading.brand == brand, "\(name)", sourceLocation: sourceLocation)
    #expect(reading.model == model, "\(name)", sourceLocation: sourceLocation)
    #expect(reading.values.map(\.key) == expected.map(\.0), "\(name)", sourceLocation: sourceLocation)
    #expect(reading.values.map(\.value) == expected.map(\.1), "\(name)", sourceLocation: sourceLocation)
    #expect(reading.packetID == packetID, "\(name)", sourceLocation: sourceLocation)
    #expect(!reading.encrypted && reading.refusal == nil, sourceLocation: sourceLocation)
}

/// `ad` carries `format` but malformed: decoding throws, naming the format.
func expectMalformed(_ format: any SensorFormat.Type, _ ad: SensorAdvertisement, _ name: String,
                     sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let r = try format.decode(ad, keys: SensorKeys())
        Issue.record("\(name): expected a decode error, got \(String(describing: r?.values))", sourceLocation: sourceLocation)
    } catch {
        #expect(!error.reason.isEmpty, sourceLocation: sourceLocation)
    }
}
