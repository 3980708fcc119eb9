// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "swift-ble-host",
    products: [
        .library(name: "BLEWire", targets: ["BLEWire"]),
        .library(name: "BLETransport", targets: ["BLETransport"]),
        .library(name: "BLECore", targets: ["BLECore"]),
        .library(name: "ATT", targets: ["ATT"]),
        .library(name: "SMP", targets: ["SMP"]),
        .library(name: "GATTClient", targets: ["GATTClient"]),
        .library(name: "GATTServer", targets: ["GATTServer"]),
        .library(name: "BLETestSupport", targets: ["BLETestSupport"]),
        .library(name: "BLESensors", targets: ["BLESensors"]),
        .library(name: "BLEGateway", targets: ["BLEGateway"]),
        .library(name: "BLESeed", targets: ["BLESeed"]),
        // The one umbrella: `import BLEHost` for an application's wire values, central, GATT and pairing.
        .library(name: "BLEHost", targets: ["BLEHost"]),
        .executable(name: "ble", targets: ["ble"]),
    ],
    targets: [
        .systemLibrary(
            name: "CHCI",
            pkgConfig: "bluez",
            providers: [.apt(["libbluetooth-dev"])]
        ),
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        // The wire codecs (HCI, L2CAP signaling and K-frames, advertising data, btsnoop): no I/O.
        .target(name: "BLEWire"),
        // The fd/errno edge: HCI sockets, H4 streams, replay, btsnoop files, the kernel's management interface, logging.
        .target(name: "BLETransport", dependencies: ["BLEWire", "CHCI"]),
        .target(name: "BLECore", dependencies: ["BLEWire", "BLETransport", "CHCI"]),
        .target(name: "SMP", dependencies: ["BLECore", "CCrypto", "BLETransport", "BLEWire"]),
        .target(name: "ATT", dependencies: ["BLECore", "BLEWire", "BLETransport"]),
        .target(name: "GATTClient", dependencies: ["ATT", "BLECore", "BLETransport", "BLEWire"]),
        .target(name: "GATTServer", dependencies: ["ATT", "BLECore", "GATTClient", "SMP", "BLEWire", "BLETransport"]),
        // The seed facade: BLESwift's forms (`Central()`, `Central(backend:queue:)`, `scan(services:)`,
        // `PeripheralIdentifier`, `notifications(for:)` as an AsyncThrowingStream) over the one way of each job.
        .target(name: "BLESeed", dependencies: ["BLECore", "GATTClient", "BLETransport", "BLEWire"]),
        .target(name: "BLETestSupport", dependencies: ["BLECore", "ATT", "GATTClient", "GATTServer", "BLETransport", "BLEWire", "BLESeed"]),
        .target(name: "BLESensors", dependencies: ["BLECore", "CCrypto", "BLEWire"]),
        .target(name: "BLEGateway", dependencies: ["CMosquitto", "BLECore", "ATT", "GATTClient", "SMP", "BLESensors", "BLETransport", "BLEWire"]),
        .target(name: "BLEHost", dependencies: ["BLEWire", "BLETransport", "BLECore", "ATT", "SMP", "GATTClient", "GATTServer", "BLESeed"]),
        .executableTarget(name: "ble", dependencies: ["BLECore", "ATT", "GATTClient", "SMP", "BLEGateway", "BLESensors", "CYAML", "GATTServer", "BLETransport", "BLEWire"]),
        .executableTarget(name: "Benchmarks", dependencies: ["BLEWire", "BLETransport", "BLECore", "ATT", "GATTClient", "BLETestSupport", "BLEGateway", "SMP", "BLESensors", "CCrypto", "GATTServer"], path: "Benchmarks", exclude: ["bumble_bench.py", "README.md", "theengs_bench.py", "requirements-theengs.txt"]),
        .testTarget(name: "BLECoreTests", dependencies: ["BLECore", "BLEWire", "BLETransport", "BLETestSupport", "GATTServer", "BLESeed"]),
        .testTarget(name: "SMPTests", dependencies: ["SMP", "BLECore", "BLETestSupport", "BLEWire"]),
        .testTarget(name: "ATTTests", dependencies: ["ATT", "BLECore", "BLETestSupport", "BLEWire"]),
        .testTarget(name: "GATTClientTests", dependencies: ["GATTClient", "ATT", "BLECore", "BLETestSupport", "BLETransport", "BLEWire", "GATTServer", "BLEHost", "BLESeed"]),
        .testTarget(name: "BLEGatewayTests", dependencies: ["BLEGateway", "GATTClient", "BLECore", "BLETestSupport", "SMP", "BLESensors", "BLETransport", "BLEWire", "GATTServer"]),
        .testTarget(name: "BLESensorsTests", dependencies: ["BLESensors", "BLECore", "BLEWire"]),
        .testTarget(name: "IntegrationTests", dependencies: ["GATTClient", "ATT", "BLECore", "BLETestSupport", "SMP", "GATTServer", "BLETransport", "BLEWire", "CHCI"]),
        .testTarget(name: "GATTServerTests", dependencies: ["GATTServer", "GATTClient", "ATT", "BLECore", "BLETestSupport", "SMP", "BLEWire"]),
    ],
    swiftLanguageModes: [.v6]
)
