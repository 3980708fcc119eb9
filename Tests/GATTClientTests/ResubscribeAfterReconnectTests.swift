import Testing
import Synchronization
import ATT
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import BLEWire
import GATTServer

/// Notification streams across a supervision timeout, on the in-process virtual controller
/// in manual time with the lab `GATTServer`: with `ReconnectPolicy.always` the link comes
/// back only after the backoff, the CCCD is written again on the new link and the same
/// stream carries on; a subscriber that left before the drop is not re-subscribed; with
/// `.never` the stream ends with a typed error naming the reason.
@Suite(.timeLimit(.minutes(1)))
struct ResubscribeAfterReconnectTests {
    static let backoff = Duration.milliseconds(500)
    static let always = ReconnectPolicy.always(maxAttempts: 3, backoff: .exponential(initial: backoff, jitter: 0))

    /// ATT_WRITE_REQ (Vol 3, Part F, 3.4.5.1): opcode 0x12, Attribute Handle (little-endian),
    /// Attribute Value. A CCCD value of 0x0001 enables notifications, 0x0002 indications,
    /// 0x0000 neither (Vol 3, Part G, 3.3.3.3), little-endian.
    static func cccdWrite(_ handle: UInt16, _ value: UInt16) -> [UInt8] {
        [0x12, UInt8(handle & 0xFF), UInt8(handle >> 8), UInt8(value & 0xFF), UInt8(value >> 8)]
    }

    @Test func cccdIsWrittenAgainAndTheSameStreamCarriesOn() async throws {
        let bed = try await LabBed(policy: Self.always)
        var events = await bed.link.events().makeAsyncIterator()
        let cccd = try await bed.cccdHandle(Lab.notifyCounter)
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        var values = stream.makeAsyncIterator()
        let firstHandle = try #require(await bed.link.handle)
        #expect(bed.attPDUs(on: firstHandle).filter { $0 == Self.cccdWrite(cccd, 0x0001) }.count == 1)
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [1, 0, 0, 0]) == 1)
        #expect(try await values.next() == [1, 0, 0, 0])

        // Gone, and before the link is back no link of the server is subscribed.
        let secondHandle = try await bed.dropAndRestore(&events)
        #expect(secondHandle != firstHandle)

        // The GATT layer re-subscribes through Connection.onReconnect: one Write Request to
        // the CCCD on the new link, with exactly the bytes of the specification.
        try await bed.vc.waitUntil("the CCCD written on the new link") { vc in
            vc.l2capReceived.contains { $0.handle == secondHandle && $0.payload == Self.cccdWrite(cccd, 0x0001) }
        }
        await bed.vc.settle()
        #expect(bed.attPDUs(on: secondHandle).filter { $0.first == 0x12 && Array($0[1...2]) == [UInt8(cccd & 0xFF), UInt8(cccd >> 8)] }
                == [Self.cccdWrite(cccd, 0x0001)])
        #expect(await bed.server.clientConfigurations(of: Lab.notifyCounter.uuid) == [0x0001])

        // The same stream receives what is sent now: the next value, not an old one again.
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [2, 0, 0, 0]) == 1)
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [3, 0, 0, 0]) == 1)
        #expect(try await values.next() == [2, 0, 0, 0])
        #expect(try await values.next() == [3, 0, 0, 0])
        await bed.central.close()
    }

    @Test func subscriberThatLeftBeforeTheDropIsNotResubscribed() async throws {
        let bed = try await LabBed(policy: Self.always)
        var events = await bed.link.events().makeAsyncIterator()
        let notifyCCCD = try await bed.cccdHandle(Lab.notifyCounter)
        let indicateCCCD = try await bed.cccdHandle(Lab.indicateCounter)
        let firstHandle = try #require(await bed.link.handle)

        let kept = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        var keptValues = kept.makeAsyncIterator()
        do {
            // Subscribed, then released: the CCCD goes back to 0x0000.
            let departed = try await bed.peripheral.subscribe(to: Lab.indicateCounter, indications: true)
            _ = departed
        }
        try await bed.vc.waitUntil("the indication CCCD cleared") { vc in
            vc.l2capReceived.contains { $0.handle == firstHandle && $0.payload == Self.cccdWrite(indicateCCCD, 0x0000) }
        }
        await bed.vc.settle()
        #expect(bed.attPDUs(on: firstHandle).filter { $0.first == 0x12 && $0.count == 5 }.suffix(2)
                == [Self.cccdWrite(indicateCCCD, 0x0002), Self.cccdWrite(indicateCCCD, 0x0000)])

        let secondHandle = try await bed.dropAndRestore(&events)
        try await bed.vc.waitUntil("the notification CCCD written on the new link") { vc in
            vc.l2capReceived.contains { $0.handle == secondHandle && $0.payload == Self.cccdWrite(notifyCCCD, 0x0001) }
        }
        await bed.vc.settle()
        let writes = bed.attPDUs(on: secondHandle).filter { $0.first == 0x12 }
        #expect(!writes.contains { $0.count >= 3 && Array($0[1...2]) == [UInt8(indicateCCCD & 0xFF), UInt8(indicateCCCD >> 8)] },
                "no write to the departed subscriber's CCCD: \(writes)")
        #expect(await bed.server.clientConfigurations(of: Lab.indicateCounter.uuid) == [0x0000])
        #expect(await bed.server.clientConfigurations(of: Lab.notifyCounter.uuid) == [0x0001])
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [7, 0, 0, 0]) == 1)
        #expect(try await keptValues.next() == [7, 0, 0, 0])
        await bed.central.close()
    }

    @Test func failedResubscriptionEndsTheStreamWithTheError() async throws {
        let bed = try await LabBed(policy: Self.always)
        var events = await bed.link.events().makeAsyncIterator()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        // From now on the server answers no request: on the restored link the MTU exchange
        // that precedes the CCCD write meets the ATT transaction timeout (30 s, Vol 3, Part F, 3.3.3).
        let server = bed.server
        let answered = await server.onQueue { server.answered }
        await server.setFaults(GATTServer.Faults(stopAnsweringAfter: answered))
        let secondHandle = try await bed.dropAndRestore(&events)
        try await bed.vc.waitUntil("the Exchange MTU Request on the new link") { vc in
            vc.l2capReceived.contains { $0.handle == secondHandle && $0.channelID == L2CAPChannelID.att && $0.payload.first == 0x02 }
        }

        let reader = bed.vc.task { () -> Result<[UInt8]?, any Error> in
            var values = stream.makeAsyncIterator()
            do { return .success(try await values.next()) } catch { return .failure(error) }
        }
        await bed.vc.advance(by: .seconds(30))
        // The stream ends when the timeout fires: its end is the event waited for (bounded).
        let result = await outcome(of: reader, within: 5)?.get()
        reader.cancel()
        guard case .failure(let error as GATTError)? = result else {
            Issue.record("the stream must end with the re-subscription's error, got \(String(describing: result))")
            return
        }
        guard case .timeout = error else {
            Issue.record("expected GATTError.timeout, got \(error)")
            return
        }
        #expect("\(error)".contains("exchanging the MTU"), "\(error)")
        #expect(await bed.link.isConnected)
        await bed.central.close()
    }

    @Test func withNeverTheStreamThrowsNamingTheReason() async throws {
        let bed = try await LabBed(policy: .never)
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        var values = stream.makeAsyncIterator()
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [1, 0, 0, 0]) == 1)
        #expect(try await values.next() == [1, 0, 0, 0])

        try bed.vc.disconnect(bed.peer, reason: .connectionTimeout)
        do {
            let value = try await values.next()
            Issue.record("the stream must end with an error, got \(String(describing: value))")
        } catch let error as GATTError {
            guard case .disconnected(let who, let reason) = error else {
                Issue.record("expected GATTError.disconnected, got \(error)")
                return
            }
            #expect(who == BluetoothAddress("C0:11:22:33:44:77"))
            // Vol 1, Part F, 1.3: error code 0x08 is Connection Timeout.
            #expect(reason.contains("Connection Timeout") && reason.contains("0x08"), "\(reason)")
            #expect("\(error)" == "C0:11:22:33:44:77 disconnected: Connection Timeout (0x08); connect again to go on")
        }
        // A minute of virtual time: no attempt to connect again.
        await bed.vc.advance(by: .seconds(60))
        #expect(bed.createConnectionCount == 1)
        #expect(await !bed.link.isConnected)
        await bed.central.close()
    }
}

fileprivate extension LabBed {
    /// Drops the link with a supervision timeout (0x08), checks nothing reconnects before
    /// the backoff, then lets the policy restore the link and returns its new handle.
    func dropAndRestore(_ events: inout AsyncStream<ConnectionEvent>.AsyncIterator) async throws -> UInt16 {
        try vc.disconnect(peer, reason: .connectionTimeout)
        #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTimeout, willReconnect: true))
        #expect(await events.nextLifecycle() == .reconnecting(attempt: 1, delay: ResubscribeAfterReconnectTests.backoff))
        await vc.advance(by: ResubscribeAfterReconnectTests.backoff - .milliseconds(1))
        #expect(createConnectionCount == 1, "no attempt before the backoff ends")
        #expect(await !link.isConnected)
        await vc.advance(by: .milliseconds(1))
        #expect(await events.nextLifecycle() == .connecting(attempt: 2))
        guard case .connected(let handle, _)? = await events.nextLifecycle() else {
            Issue.record("the link was not restored")
            throw CancellationError()
        }
        #expect(createConnectionCount == 2)
        return handle
    }
}
