import BLETestSupport
import Dispatch
import Synchronization
import BLEWire
import GATTServer

/// The GATT server's own cost: notifications sent to 1 and 8 subscribed clients, and Read
/// Requests answered, on the server's queue, each client a link that counts the octets it is
/// given (what a bearer would hand to L2CAP). Each figure carries `cpuSecondsPerOperation`:
/// process CPU time (getrusage) over all runs, per operation.
enum GATTServerWorkload {
    final class CountingLink: ATTServerLink, Sendable {
        let centralDescription: String
        let octets = Atomic<Int>(0)
        init(_ n: Int) { centralDescription = "bench client \(n)" }
        func sendToCentral(_ pdu: [UInt8]) { octets.add(pdu.count, ordering: .relaxed) }
    }

    /// A client whose send queue stays full: the server holds its first notifications and
    /// drops the rest (`ATTServerLinkFlowControl`).
    final class FullLink: ATTServerLink, ATTServerLinkFlowControl, Sendable {
        let centralDescription = "bench client (full)"
        func sendToCentral(_ pdu: [UInt8]) {}
        var canSend: Bool { false }
        func whenCanSend(_ body: @escaping @Sendable () -> Void) {}
    }

    static let level = BluetoothUUID(uuid16: 0x2A19)
    static let database = GATTDatabase(services: [
        .init(uuid: BluetoothUUID(uuid16: 0x180F), characteristics: [
            .init(uuid: level, properties: [.read, .notify], value: [0x64]),
        ]),
    ], deviceName: "bench")

    /// Handles: Generic Access 0x0001-0x0005, Generic Attribute 0x0006-0x000B, Battery 0x000C:
    /// the level's value 0x000E, its CCCD 0x000F.
    /// `clients` subscribed clients, and `full` more whose queue stays full.
    static func server(clients: Int, full: Int = 0) -> (GATTServer, DispatchQueue, [CountingLink]) {
        let queue = DispatchQueue(label: "bench-gatt-server")
        let server = GATTServer(database: database, queue: queue)
        let links = (0..<clients).map(CountingLink.init)
        let held = (0..<full).map { _ in FullLink() }
        queue.sync {
            for link in links as [any ATTServerLink] + held {
                server.connect(link)
                server.receive([0x12, 0x0F, 0x00, 0x01, 0x00], on: link)
            }
        }
        return (server, queue, links)
    }

    /// Notifications (one value to every subscribed client per call) per second, counted per client.
    static func notifications(clients: Int, values: Int, runs: Int) -> Measurement {
        let (server, queue, _) = server(clients: clients)
        let value: [UInt8] = [0x01, 0x02, 0x03, 0x04]
        return measuringCPU("GATT server: notifications to \(clients) subscribed client\(clients == 1 ? "" : "s")", operations: values * clients, runs: runs) {
            queue.sync {
                for _ in 0..<values { _ = server.notifyOnQueue(characteristic: level, value: value) }
            }
        }
    }

    /// Notifications per second to 7 clients beside one whose queue stays full (held up to the
    /// server's bound, then dropped and counted), counted per client that takes them.
    static func notificationsBesideAFullClient(values: Int, runs: Int) -> Measurement {
        let (server, queue, _) = server(clients: 7, full: 1)
        let value: [UInt8] = [0x01, 0x02, 0x03, 0x04]
        return measuringCPU("GATT server: notifications to 7 clients beside 1 full", operations: values * 7, runs: runs) {
            queue.sync {
                for _ in 0..<values { _ = server.notifyOnQueue(characteristic: level, value: value) }
            }
        }
    }

    /// Read Requests of the level answered per second.
    static func reads(count: Int, runs: Int) -> Measurement {
        let (server, queue, links) = server(clients: 1)
        let request: [UInt8] = [0x0A, 0x0E, 0x00]
        return measuringCPU("GATT server: Read Requests answered", operations: count, runs: runs) {
            queue.sync {
                for _ in 0..<count { server.receive(request, on: links[0]) }
            }
        }
    }

    /// `measure`, with the process CPU seconds per operation over all runs in `extra`.
    static func measuringCPU(_ name: String, operations: Int, runs: Int, _ body: () -> Void) -> Measurement {
        let start = DenseWorkload.cpuSeconds()
        var m = measure(name, operations: operations, runs: runs, body)
        m.extra["cpuSecondsPerOperation"] = (DenseWorkload.cpuSeconds() - start) / Double(operations * runs)
        return m
    }
}
