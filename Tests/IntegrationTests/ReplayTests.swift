import Testing
import BLETestSupport

/// Replays recorded sessions through the whole stack: the capture's controller-to-host half
/// is fed in, the host-to-controller half is the script the stack must follow.
@Suite struct ReplayTests {
    @Test(.timeLimit(.minutes(1)))
    func heartRateSessionReplaysExactly() async throws {
        let transport = try ReplayTransport(path: HeartRateSession.capturePath("heart-rate-session.btsnoop"))
        let central = Central(transport: transport)
        try await central.powerOn()
        let result = try await HeartRateSession.run(central)

        // What the stack saw, against tshark's decoding of the same capture:
        //   tshark -r heart-rate-session.btsnoop -Y "btatt.opcode == 0x1b" \
        //     -T fields -e btatt.heart_rate_measurement.value.8 -e btatt.heart_rate_measurement.value.16
        #expect(result.beatsPerMinute == [60, 63, 66, 69, 72, 75, 78, 81, 84, 87])
        // tshark -Y "bthci_evt.code == 0x05" -T fields -e bthci_evt.reason -> 0x13
        #expect(result.disconnectReason == .remoteUserTerminatedConnection)
        // The scenario (Fixtures/peers/scenarios/heart-rate.json): GAP, GATT, 180D, 180F, 180A;
        // Body Sensor Location 0x01; manufacturer "Polar Electro Oy (sim)".
        #expect(result.services == [0x1800, 0x1801, 0x180D, 0x180F, 0x180A].map { BluetoothUUID(uuid16: $0) })
        #expect(result.bodySensorLocation == .chest)

        // What the stack sent matched the capture packet for packet.
        let (mismatches, remaining) = central.executor.queue.sync { (transport.mismatches, transport.expectedRemaining) }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(3))")
        #expect(remaining == 0)
        await central.close()
    }
}
