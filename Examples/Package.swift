// swift-tools-version: 6.0
import PackageDescription

// Programs built on swift-ble-host's public API only, as an application would use it: the
// parent package by path (no network), the logic in ExampleKit, tested against the fakes.
let package = Package(
    name: "swift-ble-host-examples",
    dependencies: [.package(name: "swift-ble-host", path: "..")],
    targets: [
        .target(name: "ExampleKit", dependencies: [.product(name: "BLEHost", package: "swift-ble-host")]),
        .executableTarget(name: "HeartRateLogger", dependencies: ["ExampleKit"]),
        .executableTarget(name: "ScanToCSV", dependencies: ["ExampleKit"]),
        .testTarget(name: "ExampleKitTests", dependencies: [
            "ExampleKit", .product(name: "BLEHost", package: "swift-ble-host"), .product(name: "BLETestSupport", package: "swift-ble-host"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
