import Testing
import BLETestSupport
import ATT
import BLEWire
import BLECore

/// A peer whose response comes after the transaction timeout, and a client that asks for
/// Exchange MTU more than once. A transaction not completed within 30 s has failed and no
/// further request is sent on the bearer (Core Spec 5.4, Vol 3, Part F, 3.3.3), so a late
/// response can never answer a later request; the Exchange MTU Request is sent once per
/// connection (3.4.2.1). PDU layouts from 3.4.2 and 3.4.4.3/3.4.4.4.
@Suite(.timeLimit(.minutes(1)))
struct LateResponseTests {
    let channel: FakeChannel, scheduler: ManualScheduler, bearer: ATTBearer

    init() { (channel, scheduler, bearer) = FakeChannel.bearerBed() }

    @Test func anExchangeAfterATimedOutReadFailsTypedAndTheLateReadResponseAnswersNothing() async throws {
        let read = await bearer.spawn([.readRequest(handle: 0x0021)])
        #expect(await channel.waitForSent(count: 1) == [[0x0A, 0x21, 0x00]])
        await scheduler.advance(by: .seconds(30))
        #expect(await read[0].value == .failure(.transactionTimeout(.readRequest)))
        // The second call is made while the peer's Read Response (0B 21) is still on its way.
        await #expect(throws: ATTError.transactionTimeout(.readRequest)) { try await bearer.exchangeMTU() }
        let second = await bearer.spawn([.readRequest(handle: 0x0022)])
        #expect(await second[0].value == .failure(.transactionTimeout(.readRequest)))
        await channel.inject([0x0B, 0x21])
        #expect(await bearer.droppedPDUCount == 1)
        #expect(await bearer.hasRequestInFlight == false)
        #expect(await channel.sentSDUs() == [[0x0A, 0x21, 0x00]])
        #expect(await bearer.mtu == 23)
    }

    @Test func aTimedOutExchangeIsNotRepeatedAndItsLateResponseSetsNothing() async throws {
        let bearer = bearer
        let exchange = Task { try await bearer.exchangeMTU() }
        #expect(await channel.waitForSent(count: 1) == [[0x02, 0x05, 0x02]])   // Client Rx MTU 517
        await scheduler.advance(by: .seconds(30))
        await #expect(throws: ATTError.transactionTimeout(.exchangeMTURequest)) { try await exchange.value }
        await #expect(throws: ATTError.transactionTimeout(.exchangeMTURequest)) { try await bearer.exchangeMTU() }
        // The late Exchange MTU Response (Server Rx MTU 247) changes nothing: ATT_MTU and the
        // channel's bound stay 23.
        await channel.inject([0x03, 0xF7, 0x00])
        #expect(await bearer.mtu == 23)
        #expect(await channel.inboundLimits() == [23])
        await #expect(throws: ATTError.transactionTimeout(.exchangeMTURequest)) { try await bearer.request(.readRequest(handle: 0x0021)) }
        #expect(await channel.sentSDUs() == [[0x02, 0x05, 0x02]])
    }

    @Test func exchangeMTUIsSentOnceAfterAFailedExchange() async throws {
        let bearer = bearer
        let exchange = Task { try await bearer.exchangeMTU() }
        #expect(await channel.waitForSent(count: 1) == [[0x02, 0x05, 0x02]])
        // A response one octet short of its Server Rx MTU field.
        await channel.inject([0x03, 0xF7])
        guard case .malformedResponse(request: .exchangeMTURequest, _)? = await #expect(throws: ATTError.self, performing: { try await exchange.value }) else {
            Issue.record("the exchange did not fail as malformed"); return
        }
        // The second call is a no-op: the ATT_MTU stays 23 and nothing is sent.
        #expect(try await bearer.exchangeMTU() == 23)
        #expect(await channel.sentSDUs() == [[0x02, 0x05, 0x02]])
        // An Exchange MTU Request given to `request` is refused, typed, and not sent either.
        let error = await #expect(throws: ATTError.exchangeMTURepeated(mtu: 23)) {
            try await bearer.request(.exchangeMTURequest(clientRxMTU: 517))
        }
        #expect(error?.description == "Exchange MTU Request was already sent on this ATT bearer and is sent once per connection (Vol 3, Part F, 3.4.2.1); ATT_MTU is 23: call exchangeMTU(), which returns it")
        #expect(await channel.sentSDUs() == [[0x02, 0x05, 0x02]])
        #expect(await bearer.failure == nil)
    }

    @Test func exchangeMTUIsSentOnceAfterASuccessfulExchange() async throws {
        let bearer = bearer
        let exchange = Task { try await bearer.exchangeMTU() }
        #expect(await channel.waitForSent(count: 1) == [[0x02, 0x05, 0x02]])
        await channel.inject([0x03, 0xF7, 0x00])
        #expect(try await exchange.value == 247)
        #expect(try await bearer.exchangeMTU() == 247)
        await #expect(throws: ATTError.exchangeMTURepeated(mtu: 247)) { try await bearer.request(.exchangeMTURequest(clientRxMTU: 100)) }
        #expect(await channel.sentSDUs() == [[0x02, 0x05, 0x02]])
    }

    /// An Exchange MTU Request the channel never took (its link's queue was full) did not go
    /// out: the next `exchangeMTU()` sends it.
    @Test func anExchangeThatNeverWentOutIsSentByTheNextCall() async throws {
        let bearer = bearer
        let full = LinkError.queueFull(peer: BluetoothAddress("F0:F1:F2:F3:F4:F5")!, handle: 0x0040, channelID: 0x0004, bound: .pdus(queued: 256, limit: 256))
        await channel.failSends(with: full)
        await #expect(throws: ATTError.linkClosed(full)) { try await bearer.exchangeMTU() }
        await channel.failSends(with: nil)
        let exchange = Task { try await bearer.exchangeMTU() }
        #expect(await channel.waitForSent(count: 1) == [[0x02, 0x05, 0x02]])
        await channel.inject([0x03, 0xF7, 0x00])
        #expect(try await exchange.value == 247)
    }
}
