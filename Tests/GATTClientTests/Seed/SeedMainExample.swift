// The heart-rate flow of the seed post ("Act three: BLESwift"), as written there except for
// the import line. The test runs it against a fake whose controller is served on a
// pseudo-terminal named by $BLE_DEVICE; `print` below records what the example prints.
import BLEHost

func seedMainExample() async throws {
let central = Central()

// Wait for the radio to power on.
for await state in await central.stateEvents() {
    if state == .poweredOn { break }
}

// Scan until a heart-rate monitor turns up. Breaking out of the loop ends the scan.
let heartRateService = ServiceIdentifier(uuid: "180D")
var found: PeripheralIdentifier?
for try await event in await central.scan(services: [heartRateService]) {
    if case .discovered(let discovery) = event {
        found = discovery.peripheral
        break
    }
}
guard let identifier = found else { return }

// Connect, with automatic reconnection on unexpected drops.
let peripheral = try await central.connect(identifier, reconnect: .always(maxAttempts: 5))

// Subscribe to heart-rate notifications.
let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRateService)
let readings: AsyncThrowingStream<HeartRateMeasurement, Error> =
    peripheral.notifications(for: measurement)

for try await reading in readings {
    print("\(reading.beatsPerMinute) bpm")
}
}

/// What the example prints, line by line.
let seedMainOutput = AsyncStream.makeStream(of: String.self)

private func print(_ line: String) {
    seedMainOutput.continuation.yield(line)
}
