import Testing
import BLETestSupport
import ATT
import BLEWire
import BLECore

/// The ATT bearer against an in-memory channel. Expected SDUs are written from the PDU layouts
/// of Core Spec 5.4, Vol 3, Part F, 3.4; timing rules from 3.3.2 and 3.3.3.
@Suite(.timeLimit(.minutes(1)))
struct BearerTests {
    let channel: FakeChannel, scheduler: ManualScheduler, bearer: ATTBearer

    init() { (channel, scheduler, bearer) = FakeChannel.bearerBed() }

    /// Value events as they reach the handler, each with the number of SDUs sent by then.
    func collectValues() async -> AsyncStream<(ATTValueEvent, sentBefore: Int)> {
        let (stream, continuation) = AsyncStream.makeStream(of: (ATTValueEvent, sentBefore: Int).self)
        let channel = channel
        await bearer.setValueHandler { event in continuation.yield((event, channel.sentCountOnQueue)) }
        return stream
    }

    @Test func requestsRunOneAtATimeInFIFOOrder() async {
        let tasks = await bearer.spawn([.readRequest(handle: 1), .readRequest(handle: 2), .readRequest(handle: 3)])
        #expect(await channel.waitForSent(count: 1) == [[0x0A, 0x01, 0x00]])
        #expect(await bearer.hasRequestInFlight)
        #expect(await bearer.queuedRequestCount == 2)

        await channel.inject([0x0B, 0x11])
        #expect(await tasks[0].value == .success(.readResponse(value: [0x11])))
        #expect(await channel.waitForSent(count: 2).last == [0x0A, 0x02, 0x00])
        #expect(await bearer.queuedRequestCount == 1)

        await channel.inject([0x0B, 0x22])
        #expect(await tasks[1].value == .success(.readResponse(value: [0x22])))
        #expect(await channel.waitForSent(count: 3).last == [0x0A, 0x03, 0x00])
        await channel.inject([0x0B, 0x33])
        #expect(await tasks[2].value == .success(.readResponse(value: [0x33])))
        #expect(await channel.sentSDUs().count == 3)
        #expect(await !bearer.hasRequestInFlight)
    }

    @Test func errorResponseFailsTheMatchingRequest() async {
        let tasks = await bearer.spawn([.readRequest(handle: 3)])
        _ = await channel.waitForSent(count: 1)
        await channel.inject([0x01, 0x0A, 0x03, 0x00, 0x05])   // Read Request, handle 3, Insufficient Authentication
        let result = await tasks[0].value
        #expect(result == .failure(.errorResponse(code: .insufficientAuthentication, handle: 3, request: .readRequest)))
        if case .failure(let e) = result {
            #expect(e.description.hasPrefix("Read Request on handle 0x0003 failed: Insufficient Authentication (0x05)"))
        }
        // The bearer stays usable.
        let next = await bearer.spawn([.writeRequest(handle: 0x0C, value: [0x01, 0x00])])
        #expect(await channel.waitForSent(count: 2).last == [0x12, 0x0C, 0x00, 0x01, 0x00])
        await channel.inject([0x13])
        #expect(await next[0].value == .success(.writeResponse))
    }

    @Test func wrongAndMalformedResponsesFailOnlyTheirRequest() async {
        let tasks = await bearer.spawn([.readRequest(handle: 3), .readRequest(handle: 4), .readRequest(handle: 5), .readRequest(handle: 6)])
        _ = await channel.waitForSent(count: 1)
        await channel.inject([0x13])   // Write Response to a Read Request
        #expect(await tasks[0].value == .failure(.unexpectedResponse(request: .readRequest, response: .writeResponse)))
        _ = await channel.waitForSent(count: 2)
        await channel.inject([0x01, 0x12, 0x04, 0x00, 0x01])   // Error Response naming Write Request
        #expect(await tasks[1].value == .failure(.unexpectedResponse(request: .readRequest, response: .errorResponse)))
        _ = await channel.waitForSent(count: 3)
        await channel.inject([0x01, 0x0A, 0x05])   // truncated Error Response
        #expect(await tasks[2].value == .failure(.malformedResponse(request: .readRequest, .truncated(what: "Error Response", needed: 1))))
        _ = await channel.waitForSent(count: 4)
        await channel.inject([0x0B, 0x66])
        #expect(await tasks[3].value == .success(.readResponse(value: [0x66])))
    }

    @Test func unsolicitedResponseIsDropped() async {
        await channel.inject([0x0B, 0x01])
        #expect(await bearer.droppedPDUCount == 1)
        #expect(await channel.sentSDUs().isEmpty)
    }

    @Test func mtuExchangeAsClient() async throws {
        #expect(await bearer.mtu == 23)
        #expect(await bearer.maximumWriteValueLength(withResponse: true) == 20)
        let exchange = Task { try await bearer.exchangeMTU() }
        #expect(await channel.waitForSent(count: 1) == [[0x02, 0x05, 0x02]])   // Client Rx MTU 517
        await channel.inject([0x03, 0xF7, 0x00])                                 // Server Rx MTU 247
        #expect(try await exchange.value == 247)
        #expect(await bearer.mtu == 247)
        #expect(await bearer.maximumWriteValueLength(withResponse: false) == 244)
        #expect(await bearer.maximumSignedWriteValueLength == 232)
        // Once per bearer: the second call answers from what is known.
        #expect(try await bearer.exchangeMTU() == 247)
        #expect(await channel.sentSDUs().count == 1)
    }

    @Test func mtuNeverDropsBelowTheDefault() async throws {
        let exchange = Task { try await bearer.exchangeMTU() }
        _ = await channel.waitForSent(count: 1)
        await channel.inject([0x03, 0x10, 0x00])   // a server claiming 16
        #expect(try await exchange.value == 23)
    }

    @Test func mtuExchangeFromPeer() async throws {
        await channel.inject([0x02, 0xB9, 0x00])   // peer's Client Rx MTU 185
        #expect(await channel.waitForSent(count: 1) == [[0x03, 0x05, 0x02]])   // our Rx MTU 517
        #expect(await bearer.mtu == 185)
        #expect(try await bearer.exchangeMTU() == 185)
        #expect(await channel.sentSDUs().count == 1)
    }

    @Test func smallerClientMTUWins() async throws {
        let channel = FakeChannel()
        let bearer = ATTBearer(channel: channel, scheduler: ManualScheduler(queue: channel.executor.queue), clientMTU: 100)
        let exchange = Task { try await bearer.exchangeMTU() }
        #expect(await channel.waitForSent(count: 1) == [[0x02, 0x64, 0x00]])
        await channel.inject([0x03, 0x05, 0x02])
        #expect(try await exchange.value == 100)
    }

    @Test func malformedMTURequestGetsInvalidPDU() async {
        await channel.inject([0x02, 0x05])
        #expect(await channel.waitForSent(count: 1) == [[0x01, 0x02, 0x00, 0x00, 0x04]])
        #expect(await bearer.droppedPDUCount == 1)
        #expect(await bearer.mtu == 23)
    }

    @Test func peerRequestsGetRequestNotSupported() async {
        await channel.inject([0x0A, 0x03, 0x00])            // Read Request
        #expect(await channel.waitForSent(count: 1) == [[0x01, 0x0A, 0x00, 0x00, 0x06]])
        await channel.inject([0x52, 0x03, 0x00, 0x01])      // Write Command: ignored
        await channel.inject([0xD2] + [UInt8](repeating: 0, count: 14))   // Signed Write Command: ignored
        await channel.inject([0x14, 0x01])                  // undefined opcode, not a command
        #expect(await channel.waitForSent(count: 2) == [[0x01, 0x0A, 0x00, 0x00, 0x06], [0x01, 0x14, 0x00, 0x00, 0x06]])
        await channel.inject([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28])   // Read By Group Type Request
        #expect(await channel.waitForSent(count: 3).last == [0x01, 0x10, 0x00, 0x00, 0x06])
    }

    @Test func indicationIsConfirmedAfterTheHandler() async {
        let values = await collectValues()
        await channel.inject([0x1D, 0x08, 0x00, 0x01, 0x00, 0xFF, 0xFF])
        var it = values.makeAsyncIterator()
        let got = await it.next()
        #expect(got?.0 == ATTValueEvent(handle: 8, value: [0x01, 0x00, 0xFF, 0xFF], isIndication: true))
        #expect(got?.sentBefore == 0)   // the handler ran before the confirmation went out
        #expect(await channel.waitForSent(count: 1) == [[0x1E]])
    }

    @Test func notificationsReachTheHandler() async {
        let values = await collectValues()
        let dropped = AsyncStream.makeStream(of: [UInt8].self)
        await bearer.setDroppedPDUHandler { sdu, _ in dropped.continuation.yield(sdu) }
        await channel.inject([0x1B, 0x12, 0x00, 0x00, 0x48])
        await channel.inject([0x1B, 0x12])                                  // malformed: dropped
        await channel.inject([0x23, 0x12, 0x00, 0x01, 0x00, 0x49, 0x15, 0x00, 0x02, 0x00, 0x07, 0x08])
        await channel.inject([0x1B, 0x20, 0x00])                            // empty value
        var it = values.makeAsyncIterator()
        let first = await it.next()?.0
        #expect(first == ATTValueEvent(handle: 0x12, value: [0x00, 0x48], isIndication: false))
        #expect(first?.value == [0x00, 0x48])
        #expect(await it.next()?.0 == ATTValueEvent(handle: 0x12, value: [0x49], isIndication: false))
        #expect(await it.next()?.0 == ATTValueEvent(handle: 0x15, value: [0x07, 0x08], isIndication: false))
        #expect(await it.next()?.0 == ATTValueEvent(handle: 0x20, value: [], isIndication: false))
        var droppedIt = dropped.stream.makeAsyncIterator()
        #expect(await droppedIt.next() == [0x1B, 0x12])
        #expect(await bearer.droppedPDUCount == 1)
        #expect(await channel.sentSDUs().isEmpty)   // notifications are not confirmed
    }

    @Test func aNotificationHandlerTakesEveryNotificationAndLeavesIndicationsToTheValueHandler() async {
        struct Note: Equatable { let handle: UInt16; let value: [UInt8] }
        let notes = AsyncStream.makeStream(of: Note.self)
        await bearer.setNotificationHandler { handle, value in notes.continuation.yield(Note(handle: handle, value: Array(value))) }
        let values = await collectValues()
        // Handle Value Notification (3.4.7.1), Multiple Handle Value Notification (3.4.7.4:
        // handle, length, value, twice), Handle Value Indication (3.4.7.2).
        await channel.inject([0x1B, 0x12, 0x00, 0x00, 0x48])
        await channel.inject([0x23, 0x12, 0x00, 0x01, 0x00, 0x49, 0x15, 0x00, 0x02, 0x00, 0x07, 0x08])
        await channel.inject([0x1D, 0x08, 0x00, 0x01])
        await channel.inject([0x1B, 0x20, 0x00])
        var n = notes.stream.makeAsyncIterator()
        #expect(await n.next() == Note(handle: 0x12, value: [0x00, 0x48]))
        #expect(await n.next() == Note(handle: 0x12, value: [0x49]))
        #expect(await n.next() == Note(handle: 0x15, value: [0x07, 0x08]))
        #expect(await n.next() == Note(handle: 0x20, value: []))
        var v = values.makeAsyncIterator()
        #expect(await v.next()?.0 == ATTValueEvent(handle: 8, value: [0x01], isIndication: true))
        #expect(await channel.waitForSent(count: 1) == [[0x1E]])
    }

    @Test func sdusHandedOverAsViewsKeepTheirOffsets() async throws {
        // A Handle Value Notification (3.4.7.1: 0x1B, handle 0x0012, value 01 02) and a Read
        // Response (3.4.4.4: 0x0B, value AA) after a 4-byte L2CAP basic header (Vol 3,
        // Part A, 3.1: length, CID 0x0004), as the host passes them: indices start at 4.
        let values = await collectValues()
        await channel.inject([0x1B, 0x12, 0x00, 0x01, 0x02], after: [0x05, 0x00, 0x04, 0x00])
        var it = values.makeAsyncIterator()
        let event = await it.next()?.0
        #expect(event?.handle == 0x0012)
        #expect(event?.value == [0x01, 0x02])
        let read = Task { try await bearer.request(.readRequest(handle: 3)) }
        #expect(await channel.waitForSent(count: 1) == [[0x0A, 0x03, 0x00]])
        await channel.inject([0x0B, 0xAA], after: [0x02, 0x00, 0x04, 0x00])
        #expect(try await read.value == .readResponse(value: [0xAA]))
    }

    @Test func transactionTimeoutMakesTheBearerUnusable() async {
        let tasks = await bearer.spawn([.readRequest(handle: 1), .readRequest(handle: 2)])
        _ = await channel.waitForSent(count: 1)
        await scheduler.advance(by: .seconds(30) - .milliseconds(1))
        #expect(await bearer.hasRequestInFlight)
        #expect(await bearer.failure == nil)
        await scheduler.advance(by: .milliseconds(1))
        #expect(await tasks[0].value == .failure(.transactionTimeout(.readRequest)))
        #expect(await tasks[1].value == .failure(.transactionTimeout(.readRequest)))
        // Every later call fails at once, and nothing more is sent, not even a late answer's follow-up.
        await #expect(throws: ATTError.transactionTimeout(.readRequest)) {
            try await bearer.request(.writeRequest(handle: 3, value: [1]))
        }
        await #expect(throws: ATTError.transactionTimeout(.readRequest)) {
            try await bearer.send(command: .writeCommand(handle: 3, value: [1]))
        }
        await channel.inject([0x0B, 0x01])
        await channel.inject([0x1D, 0x08, 0x00, 0x01])
        #expect(await channel.sentSDUs() == [[0x0A, 0x01, 0x00]])
    }

    @Test func answeredRequestCancelsItsTimer() async {
        let tasks = await bearer.spawn([.readRequest(handle: 1)])
        _ = await channel.waitForSent(count: 1)
        #expect(await scheduler.pendingCount() == 1)
        await scheduler.advance(by: .seconds(29))
        await channel.inject([0x0B])
        #expect(await tasks[0].value == .success(.readResponse(value: [])))
        #expect(await scheduler.pendingCount() == 0)
        await scheduler.advance(by: .seconds(60))
        #expect(await bearer.failure == nil)
        let next = await bearer.spawn([.readRequest(handle: 2)])
        _ = await channel.waitForSent(count: 2)
        await channel.inject([0x0B, 0x02])
        #expect(await next[0].value == .success(.readResponse(value: [0x02])))
    }

    @Test func cancellation() async {
        let tasks = await bearer.spawn([.readRequest(handle: 1), .readRequest(handle: 2)])
        _ = await channel.waitForSent(count: 1)
        tasks[1].cancel()   // queued: removed
        #expect(await tasks[1].value == .failure(.cancelled(.readRequest)))
        #expect(await bearer.queuedRequestCount == 0)
        tasks[0].cancel()   // already sent: the caller leaves, the transaction stays open
        #expect(await tasks[0].value == .failure(.cancelled(.readRequest)))
        #expect(await bearer.hasRequestInFlight)
        let next = await bearer.spawn([.readRequest(handle: 3)])
        await bearer.sync()
        #expect(await channel.sentSDUs() == [[0x0A, 0x01, 0x00]])   // waits for the open transaction
        await channel.inject([0x0B, 0x01])                           // the answer to handle 1
        #expect(await channel.waitForSent(count: 2).last == [0x0A, 0x03, 0x00])
        await channel.inject([0x0B, 0x03])
        #expect(await next[0].value == .success(.readResponse(value: [0x03])))
    }

    @Test func linkCloseFailsEverythingAtOnce() async {
        let link = LinkError.disconnected(peer: BluetoothAddress("F0:F1:F2:F3:F4:F5")!, reason: .remoteUserTerminatedConnection)
        let tasks = await bearer.spawn([.readRequest(handle: 1), .readRequest(handle: 2), .writeRequest(handle: 3, value: [0])])
        _ = await channel.waitForSent(count: 1)
        let mtu = Task { try await bearer.exchangeMTU() }
        await channel.close(link)
        for t in tasks { #expect(await t.value == .failure(.linkClosed(link))) }
        await #expect(throws: ATTError.linkClosed(link)) { try await mtu.value }
        await #expect(throws: ATTError.linkClosed(link)) { try await bearer.request(.readRequest(handle: 1)) }
        await #expect(throws: ATTError.linkClosed(link)) { try await bearer.send(command: .writeCommand(handle: 1, value: [])) }
        #expect(await bearer.failure == .linkClosed(link))
        #expect(await scheduler.pendingCount() == 0)
    }

    @Test func writeCommandDoesNotWaitBehindARequest() async throws {
        let tasks = await bearer.spawn([.readRequest(handle: 1), .readRequest(handle: 2)])
        _ = await channel.waitForSent(count: 1)
        try await bearer.send(command: .writeCommand(handle: 0x0E, value: [0x01]))
        let signature = ATTSignature(signCounter: 1, mac: 0x1122_3344_5566_7788)
        try await bearer.send(command: .signedWriteCommand(handle: 0x0E, value: [0x02], signature: signature))
        #expect(await channel.sentSDUs() == [
            [0x0A, 0x01, 0x00],
            [0x52, 0x0E, 0x00, 0x01],
            [0xD2, 0x0E, 0x00, 0x02, 0x01, 0x00, 0x00, 0x00, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11],
        ])
        #expect(await bearer.queuedRequestCount == 1)
        await channel.inject([0x0B])
        _ = await tasks[0].value
        _ = await channel.waitForSent(count: 4)
        await channel.inject([0x0B])
        _ = await tasks[1].value
    }

    @Test func argumentsAreChecked() async {
        await #expect(throws: ATTError.notARequest(.writeCommand)) {
            try await bearer.request(.writeCommand(handle: 1, value: []))
        }
        await #expect(throws: ATTError.notACommand(.writeRequest)) {
            try await bearer.send(command: .writeRequest(handle: 1, value: []))
        }
        // 3 + 21 octets exceed the default ATT_MTU of 23.
        await #expect(throws: ATTError.pduTooLarge(.writeCommand, size: 24, mtu: 23)) {
            try await bearer.send(command: .writeCommand(handle: 1, value: [UInt8](repeating: 0, count: 21)))
        }
        await #expect(throws: ATTError.pduTooLarge(.writeRequest, size: 24, mtu: 23)) {
            try await bearer.request(.writeRequest(handle: 1, value: [UInt8](repeating: 0, count: 21)))
        }
        #expect(await channel.sentSDUs().isEmpty)
    }

    @Test func failedSendFailsTheRequest() async {
        let link = LinkError.transportLost("read failed: errno 19 (No such device)")
        await channel.failSends(with: link)
        let tasks = await bearer.spawn([.readRequest(handle: 1)])
        #expect(await tasks[0].value == .failure(.linkClosed(link)))
        await #expect(throws: ATTError.linkClosed(link)) {
            try await bearer.send(command: .writeCommand(handle: 1, value: []))
        }
    }
}
