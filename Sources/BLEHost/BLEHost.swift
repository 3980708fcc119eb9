// The one umbrella module: `import BLEHost` brings what an application calls, from the wire
// values up to the GATT client and server and pairing, and the seed facade (BLESeed), so
// BLESwift's examples compile with only their import line changed. Every other module of the
// package imports exactly the modules it uses.
//
//     import BLEHost
//     let central = try await Central.open("hci0")
@_exported import BLEWire
@_exported import BLETransport
@_exported import BLECore
@_exported import ATT
@_exported import SMP
@_exported import GATTClient
@_exported import GATTServer
@_exported import BLESeed
