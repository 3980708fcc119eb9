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
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_77), type: .random)

    struct Bed {
        let vc: VirtualController
        let server: GATTServer
        let faulty: FaultInjectingTransport
        let peripheral: Peripheral

        init() async throws {
            vc = VirtualController()
            server = GATTServer(database: .lab(), queue: vc.queue)
            vc.addPeripheral(SimulatedPeripheral(address: FaultCorruptionTests.peer, advertisingData: [0x02, 0x01, 0x06], attServer: server))
            faulty = FaultInjectingTransport(wrapping: vc.makeTransport(), scheduler: vc.clock)
            let central = Central(transport: faulty, options: vc.centralOptions())
            try await central.powerOn()
            let link = try await central.connect(FaultCorruptionTests.peer)
            peripheral = try await Peripheral(connection: link)
        }
    }

    /// uint32 little-endian, as the lab counter characteristic carries it.
    static func counter(_ n: UInt32) -> [UInt8] { [UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 24)] }

    @Test(arguments: [UInt64(2024), 7, 99])
    func damagedHeadersAndShortPacketsNeverDeliverAWrongValue(seed: UInt64) async throws {
        let bed = try await Bed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        // Faults start once the subscription is in place: every ACL packet to the host may
        // be dropped, repeated, held back (reordered), cut short, or have one header byte
        // (HCI ACL header or L2CAP basic header) XORed with a random mask.
        bed.faulty.setPlan(.random(RandomFaults(seed: seed, match: .acl(.toHost), drop: 0.05, duplicate: 0.05, delay: 0.05,
                                                truncate: 0.1, corrupt: 0.25, maximumDelay: .milliseconds(20), corruptRegion: .headers)))
        let count: UInt32 = 1000
        for n in 1...count { await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(n)) }
        await bed.vc.advance(by: .milliseconds(25)) // delayed packets arrive
        let stats = bed.faulty.statistics(.toHost)
        bed.faulty.setPlan(.none)
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
        let bed = try await Bed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        // Body byte 11 of the notification's ACL packet: 4 bytes of HCI ACL header, 4 of
        // L2CAP header, the ATT opcode (0x1B) and the 2-byte handle, then the value.
        bed.faulty.setPlan(.script([FaultRule(.acl(.toHost), .corrupt(offset: 11, mask: 0x80), count: 1)]))
        await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(1))
        await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(2))
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [0x81, 0, 0, 0])
        #expect(try await values.next() == [0x02, 0, 0, 0])
    }
}
