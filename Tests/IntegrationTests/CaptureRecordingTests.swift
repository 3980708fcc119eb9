import Foundation
import Testing
import BLETestSupport
import BLETransport
import BLECore

/// Records Fixtures/captures/recorded/*.btsnoop from sessions of our stack with the Bumble radio.
/// Runs only with BLE_RECORD_CAPTURES=1 (scripts/record-captures); the replay tests use the result.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["BLE_RECORD_CAPTURES"] == "1"))
struct CaptureRecordingTests {
    @Test func recordHeartRateSession() async throws {
        try await VirtualRadio.with(scenario: "heart-rate") { radio in
            let transport = try SnoopingTransport(wrapping: try TransportSpec.parse(radio.transportSpec).open(),
                                                  path: HeartRateSession.capturePath("heart-rate-session.btsnoop"))
            let central = Central(transport: transport)
            try await central.powerOn()
            let result = try await HeartRateSession.run(central)
            #expect(result.beatsPerMinute.count == 10)
            await central.close()
        }
    }

    @Test func recordLabSession() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let transport = try SnoopingTransport(wrapping: try TransportSpec.parse(radio.transportSpec).open(),
                                                  path: HeartRateSession.capturePath("lab-session.btsnoop"))
            let central = Central(transport: transport)
            try await central.powerOn()
            let result = try await LabSession.run(central)
            #expect(result.longValue.count == 600)
            await central.close()
        }
    }
}
