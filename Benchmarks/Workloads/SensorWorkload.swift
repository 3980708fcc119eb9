import BLECore
import BLESensors
import Foundation
import BLEWire

/// sensors: the brand formats over the advertisements of Fixtures/sensors/brands.tsv (real
/// payloads of every brand format), from the AD bytes of report and scan response to the
/// reading's values as JSON text, one thread; TheengsDecoder's `decodeBLE` takes the same
/// payloads as its JSON input and gives JSON text (theengs_bench.py).
enum SensorWorkload {
    struct Payload { var data: [UInt8]; var response: [UInt8] }

    static var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/sensors/brands.tsv")
    }

    static func payloads() throws -> [Payload] {
        try String(contentsOf: fixtures, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            let f = line.split(separator: "\t").map(String.init)
            guard f.count == 3, let data = [UInt8](hex: f[1]) else { return nil }
            return Payload(data: data, response: f[2] == "-" ? [] : [UInt8](hex: f[2]) ?? [])
        }
    }

    /// Decodes every payload `rounds` times; fails unless every one gives a reading each time.
    static func run(rounds: Int, runs: Int) throws -> Measurement {
        let payloads = try payloads()
        let address = LEAddress(BluetoothAddress(rawValue: 0xAABB_CCDD_EEFF), type: .public)
        var decoded = 0
        var bytes = 0
        var text: [UInt8] = []
        text.reserveCapacity(512)
        var m = try measure("sensors: brand formats, AD bytes -> reading -> JSON text (payloads)", operations: rounds * payloads.count, runs: runs) {
            decoded = 0
            bytes = 0
            for _ in 0..<rounds {
                for p in payloads {
                    let ad = SensorAdvertisement(address: address, data: AdvertisingData(bytes: p.data), scanResponse: AdvertisingData(bytes: p.response))
                    guard let reading = try BrandSensorFormats.decode(ad, keys: SensorKeys()) else { continue }
                    text.removeAll(keepingCapacity: true)
                    JSONValue.object(reading.values.map { ($0.key, $0.value) }).write(into: &text)
                    bytes &+= text.count
                    decoded += 1
                }
            }
        }
        guard decoded == rounds * payloads.count else {
            throw SensorDecodeError(format: "bench", reason: "\(decoded) of \(rounds * payloads.count) payloads decoded")
        }
        m.extra = ["payloads": Double(payloads.count), "jsonBytesPerPayload": Double(bytes) / Double(decoded)]
        return m
    }

    /// TheengsDecoder's rate on the same payloads (theengs_bench.py with a Python that has the
    /// `TheengsDecoder` package), or nil.
    static func theengs(python: String, iterations: Int) -> Double? {
        runPeerScript(python: python, script: "theengs_bench.py", arguments: [fixtures.path, String(iterations)])
    }
}
