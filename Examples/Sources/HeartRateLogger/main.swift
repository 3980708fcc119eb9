// heart-rate-logger [DEVICE]: logs a heart-rate monitor's readings, one line each.
// DEVICE is a transport spec (default $BLE_DEVICE, else hci0).
import ExampleKit
import BLEHost

let central = Central(device: CommandLine.arguments.dropFirst().first)
do {
    try await HeartRateLog.run(central) { print($0) }
} catch {
    exitWithError("heart-rate-logger: \(error)")
}
