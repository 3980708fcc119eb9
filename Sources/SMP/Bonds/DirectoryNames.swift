#if canImport(Glibc)
import Glibc
#endif
import BLECore
import BLEWire

/// The entries of an open directory stream whose names are Bluetooth addresses (a bond
/// directory's adapters, BlueZ's adapters and peers), sorted by name.
func addressEntries(_ dir: OpaquePointer) -> [(name: String, address: BluetoothAddress)] {
    entryNames(dir).compactMap { name in BluetoothAddress(name).map { (name, $0) } }.sorted { $0.name < $1.name }
}

/// Every name in an open directory stream.
func entryNames(_ dir: OpaquePointer) -> [String] {
    var names: [String] = []
    while let entry = readdir(dir) {
        names.append(withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
    }
    return names
}
