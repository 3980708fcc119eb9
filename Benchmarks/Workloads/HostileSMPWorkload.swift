import BLECore
import BLETestSupport
import SMP
import BLEWire

extension HostileWorkload {
    /// SMP PDUs a central must refuse, with no pairing running, 100 per job (Vol 3, Part H,
    /// 3.5): a Pairing Request from the peripheral (only a central starts pairing: Pairing
    /// Failed, Command Not Supported 0x07), a Pairing Response of 3 octets instead of 7
    /// (Invalid Parameters 0x0A), an unknown code 0x7F (0x07), and a Security Request with no
    /// handler (Pairing Not Supported 0x05). Each is answered once (an answer
    /// that finds the link's send queue full is dropped and counted), and nothing is kept.
    static func smpFlood(_ stack: BenchStack, _ link: BenchStack.Link, count: Int, healthy: HealthyLoad) async throws -> Result {
        _ = try await link.connection.securityManager()
        let perJob = 100
        let pdus: [[UInt8]] = [
            [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07],
            [0x02, 0x03, 0x00],
            [0x7F, 0x00],
            [0x0B, 0x0D],
        ]
        let chunk = (0..<perJob).flatMap { i in
            l2capH4(handle: link.handle, channelID: L2CAPChannelID.securityManager, payload: pdus[i % pdus.count])
        }
        let m = try await measure("hostile: malformed and unexpected SMP PDUs with no pairing running (PDUs)", events: count, healthy: healthy) { meter, plan in
            let (tally, dropped) = await feedCountingAnswers(stack, chunk, times: count / perJob, plan: plan, meter: meter)
            return ["pairingFailedSent": Double(tally.pairingFailed), "answersDroppedAtAFullLinkQueue": Double(dropped)]
        }
        return Result(measurement: m, bounded: true)
    }
}
