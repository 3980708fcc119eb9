// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "swift-ble-host",
    products: [
        .library(name: "BLECore", targets: ["BLECore"]),
        .library(name: "ATT", targets: ["ATT"]),
        .library(name: "GATTClient", targets: ["GATTClient"]),
        .library(name: "BLETestSupport", targets: ["BLETestSupport"]),
        .executable(name: "ble", targets: ["ble"]),
    ],
    targets: [
        .systemLibrary(
            name: "CHCI",
            pkgConfig: "bluez",
            providers: [.apt(["libbluetooth-dev"])]
        ),
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        .target(name: "BLECore", dependencies: ["CHCI"]),
        .target(name: "ATT", dependencies: ["BLECore"]),
        .target(name: "GATTClient", dependencies: ["ATT", "BLECore"]),
        .target(name: "BLETestSupport", dependencies: ["BLECore", "ATT", "GATTClient"]),
        .executableTarget(name: "ble", dependencies: ["BLECore", "ATT", "GATTClient", "CYAML"]),
        .executableTarget(name: "Benchmarks", dependencies: ["BLECore", "ATT", "GATTClient", "BLETestSupport"], path: "Benchmarks", exclude: ["bumble_bench.py", "README.md"]),
        .testTarget(name: "BLECoreTests", dependencies: ["BLECore", "BLETestSupport"]),
        .testTarget(name: "ATTTests", dependencies: ["ATT", "BLECore", "BLETestSupport"]),
        .testTarget(name: "GATTClientTests", dependencies: ["GATTClient", "ATT", "BLECore", "BLETestSupport"]),
        .testTarget(name: "IntegrationTests", dependencies: ["GATTClient", "ATT", "BLECore", "BLETestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
