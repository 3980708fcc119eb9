import BLECore
import BLESensors
import Testing
import BLEWire

/// `SensorKeys` prints the addresses that have a bindkey, never the key. The key is the example
/// bindkey of BTHome's encryption documentation.
@Suite struct SensorKeysRedactionTests {
    static let bindkey: [UInt8] = [0x23, 0x1D, 0x39, 0xC1, 0xD7, 0xCC, 0x1A, 0xB1, 0xAE, 0xE2, 0x24, 0xCD, 0x09, 0x6D, 0xB9, 0x32]
    static let address = BluetoothAddress(rawValue: 0x54_48_E6_8F_80_A5)

    @Test func keysPrintAsRedactedAddresses() {
        let keys = SensorKeys([Self.address: Self.bindkey])
        var dumped = ""
        dump(keys, to: &dumped)
        let hex = Self.bindkey.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        for text in ["\(keys)", String(reflecting: keys), dumped] {
            #expect(text.contains("54:48:E6:8F:80:A5"), "\(text)")
            #expect(text.contains("<redacted>"), "\(text)")
            #expect(!text.lowercased().contains(hex), "\(text)")
            #expect(!text.contains("35, 29, 57, 193"), "\(text)")   // the key as a decimal [UInt8]
        }
        #expect("\(keys)" == "SensorKeys(54:48:E6:8F:80:A5: <redacted>)")
        #expect(keys[Self.address] == Self.bindkey)
    }
}
