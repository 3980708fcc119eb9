import Foundation

/// Where the radio's interpreter, script and scenarios live, relative to the package root.
enum VirtualRadioPaths {
    /// The package root: this file is `<root>/Sources/BLETestSupport/VirtualRadio/VirtualRadioPaths.swift`.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    static let peersDirectory = packageRoot.appendingPathComponent("Fixtures/peers")
    static let scenariosDirectory = peersDirectory.appendingPathComponent("scenarios")

    /// `BLE_PYTHON`, else `<root>/.venv/bin/python`.
    static func python() throws(VirtualRadioError) -> String {
        var searched: [String] = []
        if let fromEnvironment = ProcessInfo.processInfo.environment["BLE_PYTHON"], !fromEnvironment.isEmpty {
            if FileManager.default.isExecutableFile(atPath: fromEnvironment) { return fromEnvironment }
            searched.append("BLE_PYTHON=\(fromEnvironment)")
        } else {
            searched.append("BLE_PYTHON (unset)")
        }
        let venv = packageRoot.appendingPathComponent(".venv/bin/python").path
        if FileManager.default.isExecutableFile(atPath: venv) { return venv }
        searched.append(venv)
        throw .pythonNotFound(searched: searched)
    }

    static func script() throws(VirtualRadioError) -> String {
        let path = peersDirectory.appendingPathComponent("virtual_radio.py").path
        guard FileManager.default.fileExists(atPath: path) else { throw .scriptNotFound(path: path) }
        return path
    }

    /// A bundled scenario name ("heart-rate") or a path to a JSON file.
    static func scenario(_ nameOrPath: String) throws(VirtualRadioError) -> String {
        let fm = FileManager.default
        if nameOrPath.contains("/") || nameOrPath.hasSuffix(".json") {
            if fm.fileExists(atPath: nameOrPath) {
                return URL(fileURLWithPath: nameOrPath).standardizedFileURL.path
            }
        } else {
            let bundled = scenariosDirectory.appendingPathComponent(nameOrPath + ".json").path
            if fm.fileExists(atPath: bundled) { return bundled }
        }
        throw .scenarioNotFound(nameOrPath, available: availableScenarios())
    }

    static func availableScenarios() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: scenariosDirectory.path)) ?? []
        return files.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }
}
