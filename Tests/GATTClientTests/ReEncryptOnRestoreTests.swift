import Testing
import Synchronization
import ATT
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import BLEWire

/// A restored link that was encrypted is encrypted again before anything else is sent on it:
/// the MTU exchange and the CCCD writes of the resubscription wait for the security raiser
/// (a bond's LTK), since a peer may require encryption for them (Vol 3, Part C, 10.3.2.2).
@Suite(.timeLimit(.minutes(1)))
struct ReEncryptOnRestoreTests {
    @Test func restoredLinkIsEncryptedBeforeTheCCCDIsWrittenAgain() async throws {
        let bed = try await LabBed(policy: ResubscribeAfterReconnectTests.always)
        bed.vc.answer(HCIOpcode(rawValue: 0x2019), with: .encrypting)
        try await bed.link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: .encrypted)
        let link = bed.link
        let vc = bed.vc
        // What the raiser saw of the new link when it was called: ATT PDUs already sent on it.
        let seenOnRaise = Mutex<[Int]>([])
        await bed.peripheral.setSecurityRaiser { level, _ in
            let handle = await link.handle ?? 0
            seenOnRaise.withLock { $0.append(vc.l2capReceived.filter { $0.handle == handle && $0.channelID == L2CAPChannelID.att }.count) }
            try await link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: level)
        }
        let cccd = try await bed.cccdHandle(Lab.notifyCounter)
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        var values = stream.makeAsyncIterator()
        var events = await bed.link.events().makeAsyncIterator()

        let secondHandle = try await bed.dropAndReconnect(&events)
        #expect(await events.nextLifecycle() == .securityChanged(.encrypted))
        try await bed.vc.waitUntil("the CCCD written on the new link") { vc in
            vc.l2capReceived.contains { $0.handle == secondHandle && $0.payload == ResubscribeAfterReconnectTests.cccdWrite(cccd, 0x0001) }
        }
        // Called once, before the first ATT PDU of the new link.
        #expect(seenOnRaise.withLock { $0 } == [0])
        let enables = bed.vc.commandsReceived.filter { $0.opcode.rawValue == 0x2019 }
        #expect(enables.map { Array($0.parameters.prefix(2)) }.last == [UInt8(secondHandle & 0xFF), UInt8(secondHandle >> 8)])
        #expect(await bed.link.securityLevel == .encrypted)
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [9, 0, 0, 0]) == 1)
        #expect(try await values.next() == [9, 0, 0, 0])
        await bed.central.close()
    }

    /// The bond no longer works on the restored link (the peer lost it): the subscription's
    /// stream ends with a typed error that says security is needed, and no CCCD is written.
    @Test func failedReEncryptionEndsTheStreamsWithTheReason() async throws {
        let bed = try await LabBed(policy: ResubscribeAfterReconnectTests.always)
        bed.vc.answer(HCIOpcode(rawValue: 0x2019), with: .encrypting, times: 1)
        try await bed.link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: .encrypted)
        let link = bed.link
        await bed.peripheral.setSecurityRaiser { level, _ in
            try await link.startEncryption(longTermKey: 0x42, ediv: 0, rand: 0, level: level)
        }
        let cccd = try await bed.cccdHandle(Lab.notifyCounter)
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        var values = stream.makeAsyncIterator()
        var events = await bed.link.events().makeAsyncIterator()
        let secondHandle = try await bed.dropAndReconnect(&events)
        do {
            _ = try await values.next()
            Issue.record("the stream went on without encryption")
        } catch let error as GATTError {
            guard case .securityNeeded(_, let needed, _, _, _, .failed(let reason)) = error else { Issue.record("unexpected \(error)"); return }
            #expect(needed == .encrypted)
            #expect(reason.contains("PIN or Key Missing"))
        }
        // No Write Request to the subscription's CCCD on the new link. (A CCCD reconciliation
        // that was waiting for the restore may still prepare the bearer: the MTU exchange and
        // the Service Changed CCCD, which a request made after the restore would send too.)
        #expect(!bed.attPDUs(on: secondHandle).contains { $0.count == 5 && Array($0.prefix(3)) == Array(ResubscribeAfterReconnectTests.cccdWrite(cccd, 0).prefix(3)) })
        await bed.central.close()
    }
}

extension LabBed {
    /// Drops the link (supervision timeout) and lets the reconnect policy restore it after
    /// its backoff; returns the new link's handle.
    fileprivate func dropAndReconnect(_ events: inout AsyncStream<ConnectionEvent>.AsyncIterator) async throws -> UInt16 {
        try vc.disconnect(peer, reason: .connectionTimeout)
        #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTimeout, willReconnect: true))
        #expect(await events.nextLifecycle() == .reconnecting(attempt: 1, delay: ResubscribeAfterReconnectTests.backoff))
        await vc.advance(by: ResubscribeAfterReconnectTests.backoff)
        #expect(await events.nextLifecycle() == .connecting(attempt: 2))
        guard case .connected(let handle, _)? = await events.nextLifecycle() else {
            Issue.record("the link was not restored")
            throw CancellationError()
        }
        return handle
    }
}
