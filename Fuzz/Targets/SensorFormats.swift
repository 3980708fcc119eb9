import BLECore
import BLESensors
import BLEWire

/// Sensor formats through the stateful `SensorDecoder` (BTHome, MiBeacon, ATC/pvvx, ESS,
/// Battery, iBeacon, Eddystone and the brand formats). Input: a selector byte (bit 0: the
/// device has a key; bits 1-2: which of four addresses; bit 3: counter restarts accepted),
/// then advertisements, each a length
/// byte and that many bytes of AD structures, all from devices on one decoder. Properties:
/// - nothing traps, whatever the bytes;
/// - decoding is deterministic: a fresh decoder given the same advertisement gives the same readings;
/// - a refused reading has no values, and the decoded object never shows a key's bytes;
/// - an accepted encrypted reading's counter is above every counter accepted before for that
///   device and format (replays are refused), or with restarts accepted, above the last one
///   or below `SensorDecoder.counterRestartWindow`;
/// - the decoder keeps no more devices than its capacity (one per address, so none is evicted).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.u8()
    let key: [UInt8] = [0x23, 0x1D, 0x39, 0xC1, 0xD7, 0xCC, 0x1A, 0xB1, 0xAE, 0xE2, 0x24, 0xCD, 0x09, 0x6D, 0xB9, 0x32]
    let addresses = [BluetoothAddress(rawValue: 0x5448_E68F_80A5), BluetoothAddress(rawValue: 0xA4C1_388D_18B2),
                     BluetoothAddress(rawValue: 0xA4C1_3802_83F4), BluetoothAddress(rawValue: 0x5A58_2D34_125F)]
    let keys = selector & 1 != 0 ? SensorKeys(Dictionary(uniqueKeysWithValues: addresses.map { ($0, key) })) : SensorKeys()
    let restarts = selector & 0x08 != 0
    var decoder = SensorDecoder(keys: keys, capacity: addresses.count, acceptsCounterRestart: restarts)
    var accepted: [String: UInt64] = [:]
    var n = 0
    while !input.isAtEnd {
        let length = Int(input.u8())
        let bytes = input.take(length)
        let address = addresses[(Int(selector >> 1) + n) % addresses.count]
        n += 1
        let ad = SensorAdvertisement(address: LEAddress(address, type: .public), data: AdvertisingData(bytes: bytes))
        let decoding = decoder.decode(ad)
        var fresh = SensorDecoder(keys: keys)
        let again = fresh.decode(ad)
        fuzzCheck(again.readings.map(\.format) == decoding.readings.map(\.format), "a fresh decoder recognised other formats")
        for r in decoding.readings {
            if r.refusal != nil { fuzzCheck(r.values.isEmpty, "refused \(r.format) reading has values") }
            if r.encrypted, r.refusal == nil, let counter = r.packetID {
                let slot = "\(address)/\(r.format)"
                if let last = accepted[slot], !decoding.isRepeat {
                    fuzzCheck(counter > last || (restarts && counter < SensorDecoder.counterRestartWindow),
                              "\(r.format) counter \(counter) accepted after \(last)")
                }
                accepted[slot] = restarts ? counter : max(counter, accepted[slot] ?? 0)
            }
        }
        let text = JSONValue.object(decoding.object).text
        fuzzCheck(!text.contains("231D39C1") && !text.lowercased().contains("231d39c1"), "a key reached the decoded object")
        fuzzCheck(decoder.deviceCount <= addresses.count, "the decoder keeps \(decoder.deviceCount) devices, more than its capacity")
    }
    return 0
}
