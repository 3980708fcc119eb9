import BLECore
@testable import BLESensors
import Testing
import BLEWire

/// The registry of brand formats: every fixture is decoded by exactly its brand's format, and
/// every cut and every extension of every brand payload ends in a reading, nil or a typed
/// error, never a trap.
@Suite struct BrandFormatsTests {
    static let formatOfPrefix: [(String, String)] = [
        ("ruuvi-", "Ruuvi"), ("govee-", "Govee"), ("switchbot-", "SwitchBot"), ("qingping-", "Qingping"),
        ("inkbird-", "Inkbird"), ("mopeka-", "Mopeka"),
    ]

    @Test func everyFixtureIsDecodedByItsOwnFormatOnly() throws {
        #expect(BrandFixtures.all.count == 64)
        for (name, ad) in BrandFixtures.all {
            let expected = try #require(Self.formatOfPrefix.first { name.hasPrefix($0.0) }?.1)
            var decodedBy: [String] = []
            for format in BrandFormats.all where try format.decode(ad, keys: SensorKeys()) != nil {
                decodedBy.append("\(format)")
            }
            #expect(decodedBy == [expected], "\(name)")
            #expect(try BrandSensorFormats.decode(ad, keys: SensorKeys())?.format == expected, "\(name)")
        }
    }

    @Test func cutAndExtendedPayloadsNeverTrap() {
        var outcomes = (readings: 0, nils: 0, errors: 0)
        for (_, ad) in BrandFixtures.all {
            for structures in [ad.data.structures, ad.scanResponse.structures] {
                for (index, s) in structures.enumerated() {
                    let payload: [UInt8]
                    switch s {
                    case .manufacturerSpecificData(_, let d), .serviceData16(_, let d): payload = d
                    default: continue
                    }
                    let variants = (0..<payload.count).map { Array(payload.prefix($0)) }
                        + [payload + [0], payload + Array(repeating: 0xFF, count: 40), payload.map { ~$0 }]
                    for variant in variants {
                        var changed = structures
                        switch s {
                        case .manufacturerSpecificData(let c, _): changed[index] = .manufacturerSpecificData(companyID: c, data: variant)
                        case .serviceData16(let u, _): changed[index] = .serviceData16(uuid: u, data: variant)
                        default: continue
                        }
                        let hostile = SensorAdvertisement(address: ad.address, data: AdvertisingData(changed), scanResponse: ad.scanResponse)
                        for format in BrandFormats.all {
                            do {
                                if try format.decode(hostile, keys: SensorKeys()) != nil { outcomes.readings += 1 } else { outcomes.nils += 1 }
                            } catch {
                                #expect(error.format == "\(format)")
                                outcomes.errors += 1
                            }
                        }
                    }
                }
            }
        }
        #expect(outcomes.errors > 300)
        #expect(outcomes.readings > 0)
    }
}

/// Every value a brand fixture decodes to has a row in SensorKinds, so the gateway publishes a
/// Home Assistant entity for it (a key without a row gets none).
@Suite struct BrandKindsTests {
    @Test func everyBrandKeyHasAKind() throws {
        #expect(BrandFixtures.all.count > 50)
        var missing: Set<String> = []
        for (_, ad) in BrandFixtures.all {
            var decoder = SensorDecoder()
            for reading in decoder.decode(ad).readings {
                for (key, value) in reading.values {
                    if case .object = value { continue }
                    if SensorKinds.kind(for: key) == nil { missing.insert(key) }
                }
            }
        }
        #expect(missing.isEmpty, "keys without a SensorKinds row: \(missing.sorted())")
    }
}
