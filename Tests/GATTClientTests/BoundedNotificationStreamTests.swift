import Testing
import ATT
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import GATTServer
import BLEWire

/// Notification and indication streams are bounded: a server that floods a consumer which
/// does not read makes the stream drop the oldest values (counted), end with a typed error,
/// or, for indications, wait with the confirmation until the value is in the buffer. The
/// server is the lab GATT server on the in-process virtual controller; a Read Request sent
/// after the flood marks when the host has handled everything before its response (the
/// controller hands the host its packets in order).
@Suite(.timeLimit(.minutes(1)))
struct BoundedNotificationStreamTests {
    static func counter(_ n: Int) -> [UInt8] { [UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF), 0, 0] }

    /// Confirmations the server received.
    static func confirmations(_ server: GATTServer) -> Int {
        server.log.filter { $0 == .handleValueConfirmation }.count
    }

    /// Sends a Handle Value Indication on every link without waiting for its confirmation.
    static func indicate(_ server: GATTServer, _ characteristic: CharacteristicIdentifier, _ value: [UInt8]) async {
        await server.onQueue {
            guard let handle = server.valueHandleOnQueue(characteristic.uuid) else { return }
            for state in server.links.values {
                state.link.sendToCentral(ATTPDU.handleValueIndication(handle: handle, value: value).bytes)
            }
        }
    }

    @Test func aFloodDropsTheOldestNotificationsAndCountsThem() async throws {
        let bed = try await LabBed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter, bufferingPolicy: .bufferingNewest(8))
        for n in 1...100 { await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(n)) }
        _ = try await bed.peripheral.read(Lab.pattern)   // everything sent before was handled
        #expect(try await bed.peripheral.droppedValueCount(for: Lab.notifyCounter) == 92)
        var it = stream.makeAsyncIterator()
        var got: [[UInt8]] = []
        for _ in 0..<8 { got.append(try #require(try await it.next())) }
        #expect(got == (93...100).map(Self.counter))
        // The link and the stream go on.
        await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(101))
        #expect(try await it.next() == Self.counter(101))
    }

    @Test func theDefaultPolicyIsBoundedAndTheStreamCountsItsDrops() async throws {
        let bed = try await LabBed()
        let limit = try #require(StreamBufferingPolicy.notificationDefault.limit)
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        var it = stream.makeAsyncIterator()
        let first = Task { try await it.next() }
        // The CCCD is written before subscribe returns; the first value wakes the waiting consumer.
        #expect(await bed.server.waitUntil("subscribed") { $0.cccdValues(of: Lab.notifyCounter.uuid) == [1] })
        await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(0))
        #expect(try await first.value == Self.counter(0))
        for n in 1...(limit + 10) { await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(n)) }
        _ = try await bed.peripheral.read(Lab.pattern)
        #expect(stream.droppedCount == 10)
    }

    @Test func endingWhenFullEndsTheStreamWithConsumerTooSlowAfterWhatItHeld() async throws {
        let bed = try await LabBed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter, bufferingPolicy: .endingWhenFull(4))
        for n in 1...10 { await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: Self.counter(n)) }
        _ = try await bed.peripheral.read(Lab.pattern)
        var got: [[UInt8]] = []
        do {
            for try await v in stream { got.append(v) }
            Issue.record("the stream should end with consumerTooSlow")
        } catch let error as StreamError {
            guard case .consumerTooSlow(let name, let limit) = error else { return }
            #expect(limit == 4)
            #expect(name.contains("C0:11:22:33:44:77") && name.contains("notifications of handle"))
        }
        #expect(got == (1...4).map(Self.counter))
        // The subscriber left: the CCCD is cleared; the link still answers.
        #expect(await bed.server.waitUntil("CCCD cleared") { $0.cccdValues(of: Lab.notifyCounter.uuid) == [0] })
        _ = try await bed.peripheral.read(Lab.pattern)
    }

    @Test func anIndicationIsConfirmedOnlyOnceItIsInTheBuffer() async throws {
        let bed = try await LabBed()
        let server = bed.server
        let stream = try await bed.peripheral.subscribe(to: Lab.indicateCounter, indications: true, bufferingPolicy: .bufferingOldest(2))
        // Two fit in the buffer: each is confirmed at once.
        for n in 1...2 {
            await Self.indicate(server, Lab.indicateCounter, [UInt8(n)])
            #expect(await server.waitUntil("confirmation \(n)") { Self.confirmations($0) == n })
        }
        // The third finds the buffer full: no confirmation while the consumer does not read.
        await Self.indicate(server, Lab.indicateCounter, [3])
        _ = try await bed.peripheral.read(Lab.pattern)   // the host has handled the indication
        #expect(await server.onQueue { Self.confirmations(server) } == 2)
        // Reading takes the buffered values: the third goes in and is confirmed.
        var it = stream.makeAsyncIterator()
        #expect(try await it.next() == [1])
        #expect(await server.waitUntil("confirmation 3") { Self.confirmations($0) == 3 })
        #expect(try await it.next() == [2])
        #expect(try await it.next() == [3])
        #expect(try await bed.peripheral.droppedValueCount(for: Lab.indicateCounter, indications: true) == 0)
    }

    @Test func anIndicationBeforeTheConfirmationOfThePreviousOneIsDropped() async throws {
        let bed = try await LabBed()
        let server = bed.server
        let stream = try await bed.peripheral.subscribe(to: Lab.indicateCounter, indications: true, bufferingPolicy: .bufferingOldest(1))
        // A server that ignores the sequential protocol (Vol 3, Part F, 3.3.2): three
        // indications at once. The first fills the buffer (confirmed), the second waits for
        // room, the third arrives before its confirmation and is dropped.
        await Self.indicate(server, Lab.indicateCounter, [1])
        await Self.indicate(server, Lab.indicateCounter, [2])
        await Self.indicate(server, Lab.indicateCounter, [3])
        _ = try await bed.peripheral.read(Lab.pattern)
        #expect(await server.onQueue { Self.confirmations(server) } == 1)
        #expect(await bed.peripheral.bearer.droppedPDUCount == 1)
        var it = stream.makeAsyncIterator()
        #expect(try await it.next() == [1])
        #expect(await server.waitUntil("confirmation 2") { Self.confirmations($0) == 2 })
        #expect(try await it.next() == [2])
    }
}
