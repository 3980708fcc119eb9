import Testing
import BLETestSupport
@testable import BLECore
@testable import BLETransport
import BLEWire
import GATTClient
import GATTServer

/// Write Command (write without response) under controller flow control: one LE ACL buffer,
/// returned only when the test says so (Number Of Completed Packets, Vol 4, Part E, 7.7.19).
/// Nothing is dropped, order is kept, and a busy link does not hold back another link's
/// request.
@Suite struct WriteWithoutResponseFlowTests {
    static let a = LEAddress(BluetoothAddress(rawValue: 0xC0_57_00_00_00_0A), type: .random)
    static let b = LEAddress(BluetoothAddress(rawValue: 0xC0_57_00_00_00_0B), type: .random)

    /// Returns the controller's buffer once per turn until `task` has finished (bounded).
    static func pump<T: Sendable>(_ vc: VirtualController, _ task: Task<T, any Error>) async throws -> T {
        for _ in 0..<200 {
            await vc.settle()
            vc.completePackets()
        }
        return try await task.value
    }

    @Test func writesWithoutResponseWaitForCreditsInOrderAndDoNotStarveAnotherLink() async throws {
        var options = VirtualController.Options()
        options.aclPacketCount = 1
        options.packetCompletion = .manual
        let vc = VirtualController(options: options)
        let serverA = GATTServer(database: .lab(), queue: vc.queue)
        let serverB = GATTServer(database: .lab(), queue: vc.queue)
        vc.addPeripheral(SimulatedPeripheral(address: Self.a, advertisingData: [0x02, 0x01, 0x06], attServer: serverA))
        vc.addPeripheral(SimulatedPeripheral(address: Self.b, advertisingData: [0x02, 0x01, 0x06], attServer: serverB))
        let central = try await vc.poweredOnCentral()
        #expect(await central.host.aclCredits == 1)

        // Set-up (MTU exchange, discovery) with the buffer returned as soon as it is used.
        let linkA = try await central.connect(Self.a)
        let linkB = try await central.connect(Self.b)
        let pa = try await Self.pump(vc, Task { try await Peripheral(connection: linkA) })
        let pb = try await Self.pump(vc, Task { try await Peripheral(connection: linkB) })
        _ = try await Self.pump(vc, Task { try await pa.characteristics(of: Lab.service) })
        _ = try await Self.pump(vc, Task { try await pb.characteristics(of: Lab.service) })
        let handle = try #require(await serverA.valueHandle(of: Lab.scratch.uuid))
        await vc.settle()
        vc.completePackets()
        await vc.settle()
        let before = vc.aclReceived.count

        // Link A: ten Write Commands, each 20 bytes (0x52, handle, value: Vol 3, Part F, 3.4.5.3).
        let values: [[UInt8]] = (0..<10).map { n in [UInt8](repeating: UInt8(0xA0 + n), count: 20) }
        let writer = vc.task { () async throws -> Void in
            for value in values { try await pa.write(value, to: Lab.scratch, type: .withoutResponse) }
        }
        try await vc.waitForACL(count: before + 1) // the first write took the only buffer
        await vc.settle()
        #expect(vc.aclReceived.count == before + 1) // the rest wait for credits: none is dropped
        // Link B: a Read Request issued while A's writes are waiting.
        let reader = Task { try await pb.read(Lab.scratch) }
        let handleB = try #require(vc.handle(of: Self.b))
        // A's next write and B's request both wait for a buffer.
        try await central.host.sendWaiters.waitForCount("B's request queued behind A's writes") { $0 >= 2 }
        #expect(await central.host.readyLinks.contains(handleB))

        // Return the buffer one packet at a time and note when B's request leaves.
        var readSentAfter: Int?
        for turn in 1...30 {
            vc.completePackets()
            await vc.settle()
            let sent = Array(vc.aclReceived.dropFirst(before))
            if readSentAfter == nil, sent.contains(where: { $0.handle == handleB }) { readSentAfter = turn }
            if sent.count >= values.count + 1 { break }
        }
        _ = try await Self.pump(vc, writer)
        #expect(try await Self.pump(vc, reader) == [UInt8](repeating: 0, count: 512))

        // B's request went out within two buffer returns, not after A's ten writes.
        #expect(try #require(readSentAfter) <= 2)
        // All ten writes reached the server, in order, byte for byte.
        let fromA = vc.aclReceived.dropFirst(before).filter { $0.handle == vc.handle(of: Self.a) }
        #expect(fromA.map(\.data) == values.map { value in
            // L2CAP basic header (length, CID 0x0004), then the Write Command.
            [UInt8(value.count + 3), 0x00, 0x04, 0x00, 0x52, UInt8(handle & 0xFF), UInt8(handle >> 8)] + value
        })
        #expect(await serverA.appliedWrites().suffix(values.count).map(\.value) == values)
        await central.close()
    }
}
