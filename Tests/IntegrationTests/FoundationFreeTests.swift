import Foundation
import Testing

/// `ble` and the library modules carry no full Foundation, so a static `ble` links no ICU
/// (about 40 MB of its data): the sources import FoundationEssentials at most, and the built
/// `ble` needs no libFoundation, libFoundationInternationalization or ICU library.
/// scripts/check-footprint (make dist) checks the static release binary the same way.
@Suite struct FoundationFreeTests {
    static let modules = ["ble", "BLEGateway", "BLECore", "ATT", "SMP", "GATTClient", "BLESensors"]

    @Test func noShippedModuleImportsFullFoundation() throws {
        var offenders: [String] = []
        for module in Self.modules {
            let dir = BLETool.packageRoot.appendingPathComponent("Sources/\(module)")
            guard let files = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                let text = try String(contentsOf: file, encoding: .utf8)
                let imports = text.split(separator: "\n").filter {
                    let words = $0.split(separator: " ")
                    return words.contains("import") && ["Foundation", "FoundationInternationalization", "FoundationNetworking"].contains(words.last.map(String.init) ?? "")
                }
                if !imports.isEmpty { offenders.append("\(module)/\(file.lastPathComponent)") }
            }
        }
        #expect(offenders.isEmpty, "import FoundationEssentials (or nothing) instead: \(offenders)")
    }

    /// The dynamic libraries the built `ble` asks for (readelf's NEEDED entries).
    @Test func theBinaryNeedsNoFoundationOrICULibrary() async throws {
        let readelf = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/readelf"), ["-d", BLETool.executable.path], killAfter: .seconds(20))
        #expect(readelf.status == 0, "\(readelf.stderr)")
        let needed = readelf.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(needed.contains { $0.contains("[libbluetooth.so.3]") }, "\(readelf.stdout)")
        let forbidden = needed.filter { $0.contains("[libFoundation.so]") || $0.contains("libFoundationInternationalization") || $0.contains("libicu") || $0.contains("lib_FoundationICU") }
        #expect(forbidden.isEmpty, "\(forbidden)")
    }
}
