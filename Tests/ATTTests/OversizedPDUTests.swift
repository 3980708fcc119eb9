import Testing
import BLETestSupport
import ATT

/// A peer that sends PDUs longer than ATT_MTU, "the maximum size of any packet sent between
/// a client and a server" (Core Spec 5.4, Vol 3, Part F, 3.2.8): the bearer judges them by
/// their first octets and their size, never copies them, and keeps working. PDU layouts from
/// Vol 3, Part F, 3.4.
@Suite(.timeLimit(.minutes(1)))
struct OversizedPDUTests {
    let channel: FakeChannel, scheduler: ManualScheduler, bearer: ATTBearer

    init() { (channel, scheduler, bearer) = FakeChannel.bearerBed() }

    /// Exchange MTU (3.4.2.1/3.4.2.2): Client Rx MTU 517 (0x0205), Server Rx MTU `server`.
    func exchange(server: UInt16) async throws {
        let bearer = bearer
        let exchange = Task { try await bearer.exchangeMTU() }
        #expect(await channel.waitForSent(count: 1) == [[0x02, 0x05, 0x02]])
        await channel.inject([0x03, UInt8(server & 0xFF), UInt8(server >> 8)])
        #expect(try await exchange.value == server)
    }

    @Test func aResponseLongerThanTheDefaultMTUFailsItsRequestAndTheBearerGoesOn() async {
        let dropped = AsyncStream.makeStream(of: [UInt8].self)
        await bearer.setDroppedPDUHandler { head, _ in dropped.continuation.yield(head) }
        let tasks = await bearer.spawn([.readRequest(handle: 3)])
        #expect(await channel.waitForSent(count: 1) == [[0x0A, 0x03, 0x00]])
        // A Read Response (0x0B) of 24 octets at ATT_MTU 23.
        await channel.inject([0x0B] + [UInt8](repeating: 0x55, count: 23))
        let result = await tasks[0].value
        #expect(result == .failure(.oversizedPDU(.readResponse, size: 24, mtu: 23, request: .readRequest)))
        if case .failure(let error) = result {
            #expect(error.description.hasPrefix("Read Request was answered with a Read Response of 24 octets, longer than the ATT_MTU of 23"))
        }
        var it = dropped.stream.makeAsyncIterator()
        #expect(await it.next() == [0x0B, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55])   // the first 8 octets only
        #expect(await bearer.oversizedPDUCount == 1)
        // A 23-octet response is fine, and the bearer is usable.
        let next = await bearer.spawn([.readRequest(handle: 3)])
        _ = await channel.waitForSent(count: 2)
        await channel.inject([0x0B] + [UInt8](repeating: 0x66, count: 22))
        #expect(await next[0].value == .success(.readResponse(value: [UInt8](repeating: 0x66, count: 22))))
        #expect(await bearer.failure == nil)
    }

    @Test func afterTheExchangeTheNegotiatedMTUIsTheLimitForEveryKindOfPDU() async throws {
        let values = AsyncStream.makeStream(of: ATTValueEvent.self)
        await bearer.setValueHandler { values.continuation.yield($0) }
        try await exchange(server: 100)
        // Handle Value Notification (0x1B) of handle 0x0012: 100 octets pass, 101 do not.
        await channel.inject([0x1B, 0x12, 0x00] + [UInt8](repeating: 1, count: 97))
        await channel.inject([0x1B, 0x12, 0x00] + [UInt8](repeating: 2, count: 98))
        // Handle Value Indication (0x1D) of 101 octets: dropped, confirmed (0x1E).
        await channel.inject([0x1D, 0x12, 0x00] + [UInt8](repeating: 3, count: 98))
        #expect(await channel.waitForSent(count: 2).last == [0x1E])
        // A Write Request (0x12) of 101 octets: Error Response (0x01) for Write Request,
        // handle 0x0000, Invalid PDU (0x04) (3.4.1.1).
        await channel.inject([0x12, 0x20, 0x00] + [UInt8](repeating: 4, count: 98))
        #expect(await channel.waitForSent(count: 3).last == [0x01, 0x12, 0x00, 0x00, 0x04])
        // A 100-octet indication still goes through and is confirmed.
        await channel.inject([0x1D, 0x12, 0x00] + [UInt8](repeating: 5, count: 97))
        #expect(await channel.waitForSent(count: 4).last == [0x1E])
        var it = values.stream.makeAsyncIterator()
        #expect(await it.next() == ATTValueEvent(handle: 0x12, value: [UInt8](repeating: 1, count: 97), isIndication: false))
        #expect(await it.next() == ATTValueEvent(handle: 0x12, value: [UInt8](repeating: 5, count: 97), isIndication: true))
        #expect(await bearer.oversizedPDUCount == 3)
        #expect(await bearer.failure == nil)
    }

    @Test func aNotificationHandlerNeverSeesAnOversizedNotification() async throws {
        let notes = AsyncStream.makeStream(of: [UInt8].self)
        await bearer.setNotificationHandler { _, value in notes.continuation.yield(Array(value)) }
        // 64 KiB of notification at ATT_MTU 23, then a valid one.
        await channel.inject([0x1B, 0x12, 0x00] + [UInt8](repeating: 0xEE, count: 65_532))
        await channel.inject([0x1B, 0x12, 0x00, 0x07])
        var it = notes.stream.makeAsyncIterator()
        #expect(await it.next() == [0x07])
        #expect(await bearer.oversizedPDUCount == 1)
        #expect(await bearer.droppedPDUCount == 1)
    }

    @Test func theChannelIsBoundedToATTMTUFromTheStartAndAfterEachExchange() async throws {
        // 23 (Vol 3, Part F, 3.2.8) as soon as the bearer exists, then min(517, 100).
        #expect(await channel.inboundLimits() == [23])
        try await exchange(server: 100)
        #expect(await channel.inboundLimits() == [23, 100])
    }

    @Test func aPeerInitiatedExchangeAlsoBoundsTheChannel() async {
        // Exchange MTU Request (3.4.2.1) from the peer, Client Rx MTU 247 (0x00F7): answered
        // with Server Rx MTU 517 (3.4.2.2: 03 0502); ATT_MTU is then min(247, 517).
        await channel.inject([0x02, 0xF7, 0x00])
        #expect(await channel.waitForSent(count: 1) == [[0x03, 0x05, 0x02]])
        #expect(await channel.inboundLimits() == [23, 247])
        #expect(await bearer.mtu == 247)
    }

    @Test func aResponseTheChannelRefusedFailsItsRequestAtOnce() async throws {
        try await exchange(server: 247)
        let tasks = await bearer.spawn([.readRequest(handle: 0x0021)])
        #expect(await channel.waitForSent(count: 2).last == [0x0A, 0x21, 0x00])
        // The channel refused a Read Response (0x0B) announcing 600 octets; its first
        // fragment carried 23 of them.
        await channel.refuse(head: [0x0B] + [UInt8](repeating: 0xEE, count: 7), size: 600)
        #expect(await tasks[0].value == .failure(.oversizedPDU(.readResponse, size: 600, mtu: 247, request: .readRequest)))
        #expect(scheduler.elapsed == .zero, "no time passed: the 30 s transaction timeout played no part")
        #expect(await bearer.oversizedPDUCount == 1)
        #expect(await bearer.failure == nil)
    }

    /// A PDU refused before its opcode arrived (its first ACL fragment ended within the L2CAP
    /// header) may be the response or not: the request in flight fails at once, and its
    /// transaction stays open until a response comes, which is discarded, so the next request
    /// gets its own response.
    @Test func aRefusalBeforeTheOpcodeFailsTheRequestAtOnceAndALateResponseIsDiscarded() async throws {
        try await exchange(server: 247)
        let tasks = await bearer.spawn([.readRequest(handle: 0x0021), .readRequest(handle: 0x0022)])
        #expect(await channel.waitForSent(count: 2).last == [0x0A, 0x21, 0x00])
        await channel.refuse(head: [], size: 300)
        let first = await tasks[0].value
        #expect(first == .failure(.unidentifiedOversizedPDU(size: 300, mtu: 247, request: .readRequest)))
        if case .failure(let error) = first {
            #expect(error.description.hasPrefix("Read Request failed: while it waited the peer sent a PDU of 300 octets, longer than the ATT_MTU of 247"))
        }
        #expect(scheduler.elapsed == .zero, "no time passed: the 30 s transaction timeout played no part")
        // The refused PDU was a notification: the response to 0x0021 follows and is
        // discarded; only then does the Read Request for 0x0022 go out.
        #expect(await bearer.hasRequestInFlight)
        #expect(await channel.sentSDUs().count == 2)
        await channel.inject([0x0B, 0x21])
        #expect(await channel.waitForSent(count: 3).last == [0x0A, 0x22, 0x00])
        await channel.inject([0x0B, 0x22])
        #expect(await tasks[1].value == .success(.readResponse(value: [0x22])))
        #expect(await bearer.oversizedPDUCount == 1)
        #expect(await bearer.failure == nil)
    }

    /// The same during Exchange MTU: the exchange fails at once, and the late Exchange MTU
    /// Response still sets ATT_MTU (the server applies it too), so no second exchange is needed.
    /// A second call before that response sends no second Exchange MTU Request (once per
    /// connection, 3.4.2.1): it returns the ATT_MTU of the moment.
    @Test func aLateExchangeMTUResponseAfterARefusalStillSetsTheMTU() async throws {
        let bearer = bearer
        let exchange = Task { try await bearer.exchangeMTU() }
        #expect(await channel.waitForSent(count: 1) == [[0x02, 0x05, 0x02]])
        await channel.refuse(head: [], size: 100)
        await #expect(throws: ATTError.unidentifiedOversizedPDU(size: 100, mtu: 23, request: .exchangeMTURequest)) { try await exchange.value }
        #expect(try await bearer.exchangeMTU() == 23)
        #expect(await bearer.queuedRequestCount == 0)
        await channel.inject([0x03, 0xF7, 0x00])
        #expect(await bearer.mtu == 247)
        #expect(await channel.inboundLimits() == [23, 247])
        #expect(try await bearer.exchangeMTU() == 247)
        #expect(await channel.sentSDUs().count == 1)
    }

    /// When no response follows within the transaction timeout (the refused PDU may have been
    /// the response, or the peer is late), the bearer is unusable, as after any transaction
    /// timeout (Vol 3, Part F, 3.3.3): the queued request never goes out, and a response that
    /// comes later answers nothing.
    @Test func aRefusedResponseWithoutOpcodeThenNoResponseWithinTheTimeoutMakesTheBearerUnusable() async throws {
        let tasks = await bearer.spawn([.readRequest(handle: 0x0021), .readRequest(handle: 0x0022)])
        #expect(await channel.waitForSent(count: 1) == [[0x0A, 0x21, 0x00]])
        await channel.refuse(head: [], size: 600)
        #expect(await tasks[0].value == .failure(.unidentifiedOversizedPDU(size: 600, mtu: 23, request: .readRequest)))
        await scheduler.advance(by: .seconds(30))
        #expect(await tasks[1].value == .failure(.transactionTimeout(.readRequest)))
        #expect(await bearer.failure == .transactionTimeout(.readRequest))
        await channel.inject([0x0B, 0x21])
        await #expect(throws: ATTError.transactionTimeout(.readRequest)) { try await bearer.request(.readRequest(handle: 0x0023)) }
        #expect(await channel.sentSDUs() == [[0x0A, 0x21, 0x00]])
        #expect(await bearer.droppedPDUCount == 2, "the refused PDU and the late response")
    }
}
