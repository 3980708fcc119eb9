// scan-to-csv [DEVICE] [COUNT]: prints the devices heard as CSV, until COUNT were heard.
// DEVICE is a transport spec (default $BLE_DEVICE, else hci0).
import ExampleKit
import BLEHost

let arguments = Array(CommandLine.arguments.dropFirst())
let central = Central(device: arguments.first)
do {
    try await ScanCSV.run(central, devices: arguments.count > 1 ? Int(arguments[1]) : nil) { print($0) }
} catch {
    exitWithError("scan-to-csv: \(error)")
}
