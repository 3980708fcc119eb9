import BLECore
import BLETestSupport
import Dispatch
import Foundation
import GATTClient
import BLEWire
import BLETransport
import GATTServer

/// Wraps the virtual controller's transport so the benchmark can push raw H4 bytes into the
/// host through a real `H4Framer`, as a UART transport would, without the controller's own
/// costs. Extra transports (a socket) may feed the same handler.
final class TapTransport: HCITransport, @unchecked Sendable { // `handler` is set once in start; `framer` is used only on the adapter queue
    let base: any HCITransport
    private(set) var handler: (@Sendable (TransportEvent) -> Void)?
    private var aclReceiver: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
    private var framer = H4Framer(endpoint: "bench")
    /// Started with the base on the same queue; its packets go to the host, its close is ignored.
    var extra: (any HCITransport)?
    /// When set, ACL packets from the host go here instead of to the controller (called on the
    /// adapter queue; the receiver answers with Number Of Completed Packets itself).
    var aclSink: ((ACLDataPacket) -> Void)?
    var name: String { base.name }

    init(_ base: any HCITransport) { self.base = base }

    func start(on queue: DispatchQueue, handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        self.handler = handler
        try base.start(on: queue, handler: handler)
        try extra?.start(on: queue) { event in
            if case .packet = event { handler(event) }
        }
    }

    func send(_ packet: HCIPacket) throws(TransportError) {
        if case .acl(let acl) = packet, let aclSink { return aclSink(acl) }
        try base.send(packet)
    }

    func setACLReceiver(_ receiver: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) { aclReceiver = receiver }

    func close() {
        extra?.close()
        base.close()
    }

    /// Raw H4 bytes into the host; call on the adapter queue.
    func feed(_ bytes: UnsafeRawBufferPointer) {
        guard let handler else { return }
        // Not `??`, as in StreamTransport: it would reabstract the closure.
        let acl: @Sendable (UnsafeRawBufferPointer) -> Bool
        if let receiver = aclReceiver { acl = receiver } else { acl = { _ in false } }
        try? framer.feed(bytes, acl: acl) { handler(.packet($0)) }
    }
}

/// A central on the in-process virtual controller (immediate time) with `count` connected
/// heart-rate monitors, each a `Peripheral` whose MTU is exchanged and database discovered.
final class BenchStack: @unchecked Sendable { // immutable after `make`
    struct Link {
        let connection: Connection
        let peripheral: Peripheral
        let handle: UInt16
        let measurement: CharacteristicIdentifier
        let valueHandle: UInt16
    }

    let vc: VirtualController
    let tap: TapTransport
    let central: Central
    /// The GATT server of each peripheral, in address order.
    let servers: [GATTServer]
    var links: [Link] = []
    var queue: DispatchQueue { vc.adapterExecutor.queue }

    static func address(_ i: Int) -> LEAddress {
        LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_10_00 + UInt64(i)), type: .random)
    }

    init(peripherals: Int, database: GATTDatabase = .heartRateMonitor(), extra: (any HCITransport)? = nil,
         central centralOptions: Central.Options = Central.Options()) {
        var options = VirtualController.Options()
        options.time = .immediate
        options.aclPacketCount = 64
        let vc = VirtualController(options: options)
        self.vc = vc
        servers = (0..<peripherals).map { _ in GATTServer(database: database, queue: vc.queue) }
        for (i, server) in servers.enumerated() {
            vc.addPeripheral(SimulatedPeripheral(address: Self.address(i), advertisingData: [0x02, 0x01, 0x06], attServer: server))
        }
        tap = TapTransport(vc.makeTransport())
        tap.extra = extra
        central = Central(transport: tap, options: vc.centralOptions(centralOptions))
    }

    static func make(links count: Int, extra: (any HCITransport)? = nil) async throws -> BenchStack {
        let stack = BenchStack(peripherals: count, extra: extra)
        try await stack.central.powerOn()
        let heartRate = ServiceIdentifier(uuid: "180D")
        let measurement = CharacteristicIdentifier(uuid: "2A37", service: heartRate)
        for i in 0..<count {
            let connection = try await stack.central.connect(address(i), timeout: .seconds(5))
            let peripheral = try await Peripheral(connection: connection)
            let c = try await peripheral.resolve(measurement)
            guard let handle = await connection.handle else { throw BenchError("link \(i) lost its handle") }
            stack.links.append(Link(connection: connection, peripheral: peripheral, handle: handle, measurement: measurement, valueHandle: c.valueHandle))
        }
        return stack
    }

    func close() async {
        await central.close()
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// H4 bytes of one ACL packet (PB 0b10, one whole L2CAP PDU) carrying an ATT Handle Value
/// Notification (Vol 3, Part F, 3.4.7.1) on the ATT fixed channel 0x0004.
func notificationH4(handle: UInt16, valueHandle: UInt16, value: [UInt8]) -> [UInt8] {
    let att: [UInt8] = [0x1B, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)] + value
    let l2cap: [UInt8] = [UInt8(att.count & 0xFF), UInt8(att.count >> 8), 0x04, 0x00] + att
    let hf = handle | 0x2000
    return [0x02, UInt8(hf & 0xFF), UInt8(hf >> 8), UInt8(l2cap.count & 0xFF), UInt8(l2cap.count >> 8)] + l2cap
}

/// Resident set size in bytes (/proc/self/statm) and open descriptors (/proc/self/fd).
func residentBytes() -> Int {
    guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = s.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func openFDCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
}
