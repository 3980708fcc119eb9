import BLECore
import Dispatch
import GATTClient

/// W4: connect / discover / disconnect cycles on the in-process virtual controller; resident
/// memory and open descriptors at the end against the start.
enum ChurnWorkload {
    static func run(cycles: Int) async throws -> Measurement {
        let stack = BenchStack(peripherals: 1)
        try await stack.central.powerOn()
        let peer = BenchStack.address(0)
        var watched: [Watch] = []
        func cycle(watch: Bool = false) async throws {
            let link = try await stack.central.connect(peer, timeout: .seconds(5))
            let peripheral = try await Peripheral(connection: link)
            for s in try await peripheral.services() {
                for c in try await peripheral.characteristics(of: s) { _ = try await peripheral.descriptors(of: c) }
            }
            try await link.disconnect()
            if watch { watched.append(Watch(connection: link, peripheral: peripheral)) }
        }
        // Warm-up: caches, pools and the first-use allocations of the runtime.
        for _ in 0..<200 { try await cycle() }
        let rssStart = residentBytes(), fdStart = openFDCount()
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<cycles { try await cycle(watch: i >= cycles - 100) }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        await stack.vc.settle()
        stack.queue.sync {}
        let rssEnd = residentBytes(), fdEnd = openFDCount()
        // Objects of finished cycles still alive (a leak keeps them).
        let alive = watched.filter { $0.connection != nil || $0.peripheral != nil }.count
        // The virtual controller keeps every packet it saw for inspection: that log grows
        // with the cycles and is part of the resident memory measured here.
        let logged = stack.vc.commandsReceived.count + stack.vc.aclReceived.count + stack.vc.l2capReceived.count
            + stack.vc.l2capSent.count + stack.vc.eventsSent.count
        await stack.close()
        var m = Measurement(name: "W4 churn: connect + discover all + disconnect (cycles)", operations: cycles, seconds: seconds,
                            operationsPerSecond: Double(cycles) / seconds)
        m.extra = [
            "microsecondsPerCycle": seconds * 1e6 / Double(cycles),
            "residentBytesStart": Double(rssStart), "residentBytesEnd": Double(rssEnd),
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
