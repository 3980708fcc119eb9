import Dispatch
import Synchronization
import Testing
import ATT
import BLETestSupport
@testable import BLECore
@testable import GATTClient

/// Notifications over a byte-reading transport: the in-process virtual controller behind a
/// unix socket pair, so the host frames real H4 bytes as from a UART or TCP controller. A
/// notification that arrives whole in one ACL packet goes from the read buffer to the
/// subscriber's copy without a packet value (the transport's raw ACL receiver); anything
/// else (fragments, responses, indications) takes the packet path. Both must interleave in
/// the order the controller sent them.
@Suite(.timeLimit(.minutes(1)))
struct RawNotificationPathTests {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_99), type: .random)

    /// Passes a transport through, counting the ACL packets its raw receiver took.
    final class CountingTransport: HCITransport, Sendable {
        final class Counts: Sendable {
            let taken = Atomic<Int>(0)
        }
        let base: any HCITransport
        let counts = Counts()
        var taken: Int { counts.taken.load(ordering: .relaxed) }
        init(_ base: any HCITransport) { self.base = base }
        var name: String { base.name }
        func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
            try base.start(on: queue, handler: handler)
        }
        func send(_ packet: HCIPacket) throws(TransportError) { try base.send(packet) }
        func close() { base.close() }
        func whenReleased(_ completion: @escaping @Sendable () -> Void) { base.whenReleased(completion) }
        func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
            let counts = self.counts
            base.setACLReceiver { raw in
                let took = receiver(raw)
                if took { counts.taken.add(1, ordering: .relaxed) }
                return took
            }
        }
    }

    struct Bed {
        let vc: VirtualController
        let server: GATTServer
        let transport: CountingTransport
        let central: Central
        let peripheral: Peripheral

        init() async throws {
            var options = VirtualController.Options()
            options.time = .immediate
            // Controller-to-host ACL payloads of at most 27 bytes: a notification value
            // longer than 20 bytes (27 - 4 L2CAP - 3 ATT) arrives in two fragments.
            options.controllerToHostFragmentSize = 27
            vc = VirtualController(options: options)
            server = GATTServer(database: .lab(), queue: vc.queue)
            vc.addPeripheral(SimulatedPeripheral(address: RawNotificationPathTests.peer, advertisingData: [0x02, 0x01, 0x06], attServer: server))
            transport = CountingTransport(try vc.makeSocketTransport())
            central = Central(transport: transport, options: vc.centralOptions())
            try await central.powerOn()
            var parameters = ConnectionRequestParameters()
            parameters.requestDataLengthExtension = false
            parameters.request2MPHY = false
            let link = try await central.connect(RawNotificationPathTests.peer, parameters: parameters)
            peripheral = try await Peripheral(connection: link)
        }
    }

    @Test func wholeAndFragmentedNotificationsArriveInOrderAndOnlyWholeOnesSkipThePacketPath() async throws {
        let bed = try await Bed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        let takenBefore = bed.transport.taken
        // 1...4 whole, 5 in two fragments (24 bytes), 6...8 whole, 9 fragmented, 10 whole.
        var sent: [[UInt8]] = []
        for i in 1...10 {
            let value: [UInt8] = i == 5 || i == 9 ? [UInt8](repeating: UInt8(i), count: 24) : [UInt8(i), 0, 0, 0]
            #expect(await bed.server.notify(characteristic: Lab.uuid(6), value: value) == 1)
            sent.append(value)
        }
        var got: [[UInt8]] = []
        for try await v in stream {
            got.append(v)
            if got.count == sent.count { break }
        }
        #expect(got == sent)
        // The eight whole notifications were taken from the read buffer; the two fragmented
        // ones (four ACL packets) went the packet way.
        #expect(bed.transport.taken - takenBefore == 8)
    }

    @Test func responsesAndIndicationsBetweenNotificationsKeepTheirOrder() async throws {
        let bed = try await Bed()
        let notifications = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        let indications = try await bed.peripheral.subscribe(to: Lab.indicateCounter, indications: true)
        await bed.server.notify(characteristic: Lab.uuid(6), value: [1, 0, 0, 0])
        // A Read Response and its request between two notifications.
        let read = try await bed.peripheral.read(Lab.notifyCounter)
        #expect(read == [1, 0, 0, 0])
        #expect(await bed.server.indicate(characteristic: Lab.uuid(4), value: [7]) == 1)
        await bed.server.notify(characteristic: Lab.uuid(6), value: [2, 0, 0, 0])
        var n = notifications.makeAsyncIterator()
        #expect(try await n.next() == [1, 0, 0, 0])
        #expect(try await n.next() == [2, 0, 0, 0])
        var i = indications.makeAsyncIterator()
        #expect(try await i.next() == [7])
        #expect(await bed.server.receivedOpcodes().last == .handleValueConfirmation)
    }
}
