@_spi(Internals) import BLECore
@_spi(Internals) import BLEWire
import BLETransport
import Foundation

/// W1: H4 LE Advertising Report events (one report each, 20-31 bytes of AD data: flags,
/// complete local name, 16-bit service UUID list, manufacturer data) through the framer, the
/// report decoder, the AD structures and a scan filter on service 180D.
enum ScanWorkload {
    /// `count` distinct H4 events; every fourth advertises 180D.
    static func events(count: Int) -> [[UInt8]] {
        (0..<count).map { i in
            let name = Array("dev-\(i % 1000)".utf8) + Array(repeating: UInt8(ascii: "x"), count: i % 9)
            let uuid: UInt16 = i % 4 == 0 ? 0x180D : 0x180F
            var ad: [UInt8] = [0x02, 0x01, 0x06]
            ad += [UInt8(name.count + 1), 0x09] + name
            ad += [0x03, 0x03, UInt8(uuid & 0xFF), UInt8(uuid >> 8)]
            ad += [0x05, 0xFF, 0x59, 0x00, UInt8(i & 0xFF), UInt8((i >> 8) & 0xFF)]
            var params: [UInt8] = [0x02, 0x01, 0x00, 0x01]
            params += [UInt8(i & 0xFF), UInt8((i >> 8) & 0xFF), 0x33, 0x44, 0x55, 0xC6]
            params.append(UInt8(ad.count))
            params += ad
            params.append(UInt8(bitPattern: -60))
            return [0x04, 0x3E, UInt8(params.count)] + params
        }
    }

    /// The same reports as LE Extended Advertising Reports (Vol 4, Part E, 7.7.65.13):
    /// connectable, scannable, complete data, 1M primary PHY.
    static func extendedEvents(count: Int) -> [[UInt8]] {
        events(count: count).map { legacy in
            // Legacy parameters: subevent, count, event type, address type, address(6), length, data, RSSI.
            let address = Array(legacy[7..<13])
            let length = Int(legacy[13])
            let data = Array(legacy[14..<(14 + length)])
            var params: [UInt8] = [0x0D, 0x01, 0x03, 0x00, 0x01] + address
            params += [0x01, 0x00, 0xFF, 0x7F, UInt8(bitPattern: -60), 0x00, 0x00, 0x00]
            params += [UInt8](repeating: 0, count: 6)
            params.append(UInt8(length))
            params += data
            return [0x04, 0x3E, UInt8(params.count)] + params
        }
    }

    static func run(name: String = "W1 scan: H4 -> advertising report -> AD -> filter", stream: [UInt8], packets: Int, runs: Int) -> Measurement {
        let filter = ScanFilter(services: [BluetoothUUID(uuid16: 0x180D)])
        var matched = 0
        let m = measure(name, operations: packets, runs: runs) {
            matched = 0
            var framer = H4Framer(endpoint: "bench")
            stream.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let end = min(offset + 4096, raw.count)
                    try? framer.feed(UnsafeRawBufferPointer(rebasing: raw[offset..<end])) { packet in
                        guard case .event(let event) = packet else { return }
                        _ = try? HCIEvent.forEachAdvertisingReport(in: event.parameters) { report in
                            if filter.matches(advertisingData: report.data, rssi: report.rssi) { matched += 1 }
                        }
                    }
                    offset = end
                }
            }
        }
        precondition(matched == (packets + 3) / 4, "filter matched \(matched) of \(packets)")
        return m
    }
}
