import BLECore
import BLETestSupport
import Dispatch
import GATTClient
import GATTServer

/// W4: connect / discover / disconnect cycles on the in-process virtual controller; resident
/// memory and open descriptors at the end against the start. The test beds' packet records
/// are cleared after every cycle, so only the stack's own memory is measured.
enum ChurnWorkload {
    static func run(cycles: Int) async throws -> Measurement {
        var options = VirtualController.Options()
        options.time = .immediate
        options.aclPacketCount = 64
        let vc = VirtualController(options: options)
        let peer = BenchStack.address(0)
        let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06], attServer: server))
        let central = Central(transport: vc.makeTransport(), options: vc.centralOptions())
        try await central.powerOn()
        var watched: [Watch] = []
        func cycle(watch: Bool = false) async throws {
            let link = try await central.connect(peer, timeout: .seconds(5))
            let peripheral = try await Peripheral(connection: link)
            for s in try await peripheral.services() {
                for c in try await peripheral.characteristics(of: s) { _ = try await peripheral.descriptors(of: c) }
            }
            try await link.disconnect()
            if watch { watched.append(Watch(connection: link, peripheral: peripheral)) }
            vc.clearRecords()
            await server.clearRecords()
        }
        // Warm-up: caches, pools and the first-use allocations of the runtime.
        for _ in 0..<200 { try await cycle() }
        let rssStart = residentBytes(), fdStart = openFDCount()
        let start = DispatchTime.now().uptimeNanoseconds
        var rssMid = 0
        for i in 0..<cycles {
            try await cycle(watch: i >= cycles - 100)
            if i == cycles / 2 { rssMid = residentBytes() }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        await vc.settle()
        vc.adapterExecutor.queue.sync {}
        let rssEnd = residentBytes(), fdEnd = openFDCount()
        // Objects of finished cycles still alive (a leak keeps them).
        let alive = watched.filter { $0.connection != nil || $0.peripheral != nil }.count
        // What the virtual controller still records (cleared after every cycle).
        let logged = vc.commandsReceived.count + vc.aclReceived.count + vc.l2capReceived.count
            + vc.l2capSent.count + vc.eventsSent.count
        await central.close()
        var m = Measurement(name: "W4 churn: connect + discover all + disconnect (cycles)", operations: cycles, seconds: seconds,
                            operationsPerSecond: Double(cycles) / seconds)
        m.extra = [
            "microsecondsPerCycle": seconds * 1e6 / Double(cycles),
            "residentBytesStart": Double(rssStart), "residentBytesHalfway": Double(rssMid), "residentBytesEnd": Double(rssEnd),
            "openFDsStart": Double(fdStart), "openFDsEnd": Double(fdEnd),
            "connectionsAndPeripheralsAliveOfLast100Cycles": Double(alive),
            "virtualControllerLogEntries": Double(logged),
        ]
        return m
    }
}

struct Watch {
    weak var connection: Connection?
    weak var peripheral: Peripheral?
}
