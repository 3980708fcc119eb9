import Testing
import ATT
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
@testable import GATTClient
import BLEWire
import GATTServer

/// The host reassembles ATT PDUs up to the negotiated ATT_MTU and no further (Vol 3, Part F,
/// 3.2.8: ATT_MTU is "the maximum size of any packet sent between a client and a server";
/// 3.4.2: it is min(Client Rx MTU, Server Rx MTU) after Exchange MTU, whichever side asked).
/// A longer PDU is refused at its first ACL fragment, its continuations discarded unbuffered,
/// and the refusal goes to the bearer. Hostile peers on the in-process controller, which
/// sends 27-byte ACL fragments; PDU layouts from Vol 3, Part F, 3.4.
@Suite(.timeLimit(.minutes(1)))
struct NegotiatedMTUBoundTests {
    static let peerB = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_88), type: .random)

    /// A Handle Value Notification (3.4.7.1: 0x1B, handle) of `size` octets in all.
    static func notification(_ handle: UInt16, size: Int, fill: UInt8) -> [UInt8] {
        [0x1B, UInt8(handle & 0xFF), UInt8(handle >> 8)] + [UInt8](repeating: fill, count: size - 3)
    }

    @Test func notificationsLongerThanTheNegotiatedMTUAreDroppedUnbufferedAndTheLinksGoOn() async throws {
        let bed = try await LabBed(.init(clientMTU: 247))
        // A second link, to a well-behaved peer.
        let serverB = GATTServer(database: .lab(), queue: bed.vc.queue)
        bed.vc.addPeripheral(SimulatedPeripheral(address: Self.peerB, advertisingData: [0x02, 0x01, 0x06], attServer: serverB))
        let peripheralB = try await Peripheral(connection: try await bed.central.connect(Self.peerB), clientMTU: 247)

        let streamA = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        let streamB = try await peripheralB.subscribe(to: Lab.notifyCounter)
        #expect(await bed.peripheral.mtu == 247)
        let host = bed.central.host
        let handleA = try #require(bed.vc.handle(of: bed.peer))
        let value = try #require(await bed.server.valueHandle(of: Lab.notifyCounter.uuid))
        let capacity = try #require(await host.reassemblyCapacity(handle: handleA))
        #expect(capacity < 600)

        // 100 notifications of 600 octets and one of 248 (ATT_MTU + 1): refused at their first
        // fragment, below the 517 this side offered but above the 247 agreed.
        for _ in 0..<100 { bed.faults.sendToCentrals(Self.notification(value, size: 600, fill: 0xEE)) }
        bed.faults.sendToCentrals(Self.notification(value, size: 248, fill: 0xDD))
        await bed.vc.settle()
        #expect(await host.oversizedInboundPDUs == 101)
        #expect(await host.droppedInboundPDUs == 101)
        #expect(await bed.peripheral.bearer.oversizedPDUCount == 101)
        #expect(await host.reassemblyCapacity(handle: handleA) == capacity, "nothing of the refused PDUs was buffered")
        // Then one of exactly 247 octets arrives whole.
        bed.faults.sendToCentrals(Self.notification(value, size: 247, fill: 0x01))
        var valuesA = streamA.makeAsyncIterator()
        #expect(try await valuesA.next() == [UInt8](repeating: 0x01, count: 244))

        // Both links keep working.
        #expect(await bed.server.notify(characteristic: Lab.notifyCounter.uuid, value: [1, 0, 0, 0]) == 1)
        #expect(try await valuesA.next() == [1, 0, 0, 0])
        #expect(await serverB.notify(characteristic: Lab.notifyCounter.uuid, value: [2, 0, 0, 0]) == 1)
        var valuesB = streamB.makeAsyncIterator()
        #expect(try await valuesB.next() == [2, 0, 0, 0])
        #expect(try await bed.peripheral.read(Lab.pattern) == (0..<600).map { UInt8(truncatingIfNeeded: $0) })
        #expect(await bed.peripheral.bearer.failure == nil)
    }

    /// A bed at ATT_MTU 247 whose peer sends ACL fragments of `fragmentSize` octets and pads
    /// every response to 600 octets (the Read Response, 0x0B, announces 600 in its L2CAP
    /// header): a read of Lab.pattern fails at once, no virtual time passing, with `detail`.
    static func paddedReadFailsAtOnce(fragmentSize: Int = 27, detail: String) async throws -> LabBed {
        var options = LabBed.Options(clientMTU: 247)
        options.controller.controllerToHostFragmentSize = fragmentSize
        let bed = try await LabBed(options)
        let pattern = try await bed.peripheral.resolve(Lab.pattern)
        #expect(await bed.peripheral.mtu == 247)
        let clock = try #require(bed.vc.clock)
        let start = clock.now()
        bed.faults.padResponses(to: 600)
        await expectMalformedRead(bed.peripheral, Lab.pattern, valueHandle: pattern.valueHandle, peer: bed.peer.address, detail: detail)
        #expect(clock.now() == start, "it failed at once: no virtual time passed, the 30 s transaction timeout played no part")
        #expect(await bed.central.host.oversizedInboundPDUs == 1)
        bed.faults.padResponses(to: nil)
        return bed
    }

    @Test func aReadWhoseResponseIsLongerThanTheMTUFailsAtOnceWithATypedError() async throws {
        let bed = try await Self.paddedReadFailsAtOnce(
            detail: "Read Request was answered with a Read Response of 600 octets, longer than the ATT_MTU of 247")
        #expect(await bed.peripheral.bearer.oversizedPDUCount == 1)
        #expect(try await bed.peripheral.read(Lab.pattern) == (0..<600).map { UInt8(truncatingIfNeeded: $0) })
    }

    /// The same with ACL fragments of 4 octets: the first fragment of each PDU ends with its
    /// L2CAP header, so the refused response's opcode never arrives. The read fails at once
    /// all the same (`ATTError.unidentifiedOversizedPDU`). No response follows, so its
    /// transaction times out after 30 s, and from then on the bearer takes no request (Vol 3,
    /// Part F, 3.3.3): the read queued behind it fails with a timeout, never with a response
    /// meant for another request.
    @Test func aReadWhoseOversizedResponseIsRefusedBeforeItsOpcodeFailsAtOnce() async throws {
        let bed = try await Self.paddedReadFailsAtOnce(
            fragmentSize: 4, detail: "Read Request failed: while it waited the peer sent a PDU of 600 octets, longer than the ATT_MTU of 247")
        let next = bed.vc.task { try await bed.peripheral.read(Lab.pattern) }
        await bed.vc.advance(by: .seconds(30))
        let error = await #expect(throws: GATTError.self) { try await next.value }
        guard case .timeout? = error else { Issue.record("the queued read ended with \(String(describing: error))"); return }
        #expect(await bed.peripheral.bearer.failure == .transactionTimeout(.readRequest))
    }

    @Test func anExchangeTheServerStartsAlsoSetsTheBound() async throws {
        let bed = try await LabBed(.init(clientMTU: 517))
        let host = bed.central.host
        let handle = try #require(bed.vc.handle(of: bed.peer))
        let value = try #require(await bed.server.valueHandle(of: Lab.notifyCounter.uuid))
        // Before any exchange ATT_MTU is 23: a notification of 24 octets is refused.
        try bed.vc.sendL2CAP(from: bed.peer, channelID: L2CAPChannelID.att, payload: Self.notification(value, size: 24, fill: 0xAA))
        await bed.vc.settle()
        #expect(await host.oversizedInboundPDUs == 1)
        #expect(await host.attMaximumPDU(handle: handle) == 23)

        // The peer sends Exchange MTU Request (3.4.2.1) with Client Rx MTU 247 (0x00F7); this
        // side answers with its Rx MTU 517 (3.4.2.2: 03 0502). ATT_MTU = min(247, 517).
        try bed.vc.sendL2CAP(from: bed.peer, channelID: L2CAPChannelID.att, payload: [0x02, 0xF7, 0x00])
        await bed.vc.settle()
        #expect(bed.attPDUs(on: handle) == [[0x03, 0x05, 0x02]])
        #expect(await bed.peripheral.mtu == 247)
        #expect(await host.attMaximumPDU(handle: handle) == 247)

        // Subscribing needs no exchange of our own; then 248 octets are refused, 247 delivered.
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        #expect(bed.attPDUs(on: handle).allSatisfy { $0.first != 0x02 }, "no Exchange MTU Request from this side")
        try bed.vc.sendL2CAP(from: bed.peer, channelID: L2CAPChannelID.att, payload: Self.notification(value, size: 248, fill: 0xBB))
        try bed.vc.sendL2CAP(from: bed.peer, channelID: L2CAPChannelID.att, payload: Self.notification(value, size: 247, fill: 0xCC))
        var values = stream.makeAsyncIterator()
        #expect(try await values.next() == [UInt8](repeating: 0xCC, count: 244))
        #expect(await host.oversizedInboundPDUs == 2)
        #expect(await bed.peripheral.bearer.oversizedPDUCount == 2)
    }
}

extension HCIHost {
    /// Room in link `handle`'s reassembly buffer.
    func reassemblyCapacity(handle: UInt16) -> Int? { links[handle]?.reassembler.bufferCapacity }
    /// The largest ATT PDU link `handle` reassembles.
    func attMaximumPDU(handle: UInt16) -> Int? { links[handle]?.attMaximumPDU }
}
