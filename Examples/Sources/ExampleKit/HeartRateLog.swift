import BLEHost

/// Heart-rate logging: find a monitor, connect (reconnecting after drops), and report one
/// line per Heart Rate Measurement ("72 bpm", with RR intervals when the strap sends them).
public enum HeartRateLog {
    public static let service = ServiceIdentifier(uuid: "180D")
    public static let measurement = CharacteristicIdentifier(uuid: "2A37", service: service)

    /// Runs until `samples` readings were reported (nil: until the link is gone for good).
    public static func run(_ central: Central, samples: Int? = nil, report: @Sendable (String) -> Void) async throws {
        for await state in await central.stateEvents() where state == .poweredOn { break }
        var found: PeripheralIdentifier?
        for try await event in await central.scan(services: [service]) {
            if case .discovered(let discovery) = event {
                report("found \(discovery.name ?? "a monitor") at \(discovery.address)")
                found = discovery.peripheral
                break
            }
        }
        guard let monitor = found else { return }
        let peripheral = try await central.connect(monitor, reconnect: .always(maxAttempts: 5))
        var count = 0
        for try await reading in try await peripheral.subscribe(to: measurement, as: HeartRateMeasurement.self) {
            report(line(reading))
            count += 1
            if let samples, count >= samples { break }
        }
        try await peripheral.disconnect()
    }

    /// "72 bpm" or "72 bpm, RR 0.801 s 0.799 s".
    public static func line(_ reading: HeartRateMeasurement) -> String {
        let rr = reading.rrIntervalSeconds.map { String(format3: $0) + " s" }
        return "\(reading.beatsPerMinute) bpm" + (rr.isEmpty ? "" : ", RR " + rr.joined(separator: " "))
    }
}

extension String {
    /// `value` with three decimals, without Foundation.
    init(format3 value: Double) {
        let thousandths = Int((value * 1000).rounded())
        let fraction = String(thousandths % 1000)
        self = "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
