import Testing
import BLETestSupport
import BLECore
import GATTClient

/// Damaged controller-to-host ACL data on a link streaming notifications: what reaches a
/// subscriber is always a value the server sent, never an altered one, when the damage is in
/// the HCI or L2CAP headers or cuts packets short. A flipped bit inside the value itself is
/// delivered as it arrives: ATT carries no checksum (Vol 3, Part F); on air the link layer's
/// CRC (Vol 6, Part B, 3.1.1) is what rejects damaged packets, and the HCI transport is
/// trusted. docs/reliability.md explains.
@Suite(.timeLimit(.minutes(1)))
struct FaultCorruptionTests {
    /// The lab bed with a fault-injecting transport under the central.
    static func bed() async throws -> (LabBed, FaultInjectingTransport) {
        let bed = try await LabBed(.init(transport: { FaultInjectingTransport(wrapping: $0.makeTransport(), scheduler: $0.clock) }))
        return (bed, try #require(bed.transport as? FaultInjectingTransport))
    }

    /// uint32 little-endian, as the lab counter characteristic carries it.
    static func counter(_ n: UInt32) -> [UInt8] { [UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 24)] }

    @Test(arguments: [UInt64(2024), 7, 99])
    func damagedHeadersAndShortPacketsNeverDeliverAWrongValue(seed: UInt64) async throws {
        let (bed, faulty) = try await Self.bed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        // Faults start once the subscription is in place: every ACL packet to the host may
        // be dropped, repeated, held back (reordered), cut short, or have one header byte
        // (HCI ACL header or L2CAP basic header) XORed with a random mask.
        faulty.setPlan(.random(RandomFaults(seed: seed, match: .acl(.toHost), drop: 0.05, duplicate: 0.05, delay: 0.05,
                                            truncate: 0.1, corrupt: 0.25, maximumDelay: .milliseconds(20), corruptRegion: .headers)))
        let count: UInt32 = 1000
        for n in 1...count { await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(n)) }
        await bed.vc.advance(by: .milliseconds(25)) // delayed packets arrive
        let stats = faulty.statistics(.toHost)
        faulty.setPlan(.none)
        // A sentinel no fault touches marks the end of the run.
        let sentinel: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF]
        await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: sentinel)

        var received: [[UInt8]] = []
        for try await value in stream {
            if value == sentinel { break }
            received.append(value)
        }
        let sent = Set((1...count).map(Self.counter))
        let wrong = received.filter { !sent.contains($0) }
        #expect(wrong.isEmpty, "values the server never sent: \(wrong.prefix(5))")
        // The faults really happened, and the link kept working through them.
        #expect(stats.corrupted > 100 && stats.truncated > 50 && stats.dropped > 20)
        #expect(received.count > Int(count) / 2)
        #expect(received.count < Int(count) + stats.duplicated + 1)
    }

    @Test func bitFlipInsideTheValueIsDeliveredBecauseATTHasNoChecksum() async throws {
        let (bed, faulty) = try await Self.bed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        // Body byte 11 of the notification's ACL packet: 4 bytes of HCI ACL header, 4 of
        // L2CAP header, the ATT opcode (0x1B) and the 2-byte handle, then the value.
        faulty.setPlan(.script([FaultRule(.acl(.toHost), .corrupt(offset: 11, mask: 0x80), count: 1)]))
        await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(1))
        await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(2))
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [0x81, 0, 0, 0])
        #expect(try await values.next() == [0x02, 0, 0, 0])
    }
}
