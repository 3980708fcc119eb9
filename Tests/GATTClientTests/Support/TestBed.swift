import Testing
import Dispatch
import GATTClient
import BLETestSupport
import BLEWire
import BLECore
import GATTServer

/// A client `Peripheral` wired to a `GATTServer` through a `LoopbackATTChannel`, on one
/// adapter executor.
struct TestBed {
    let executor: AdapterExecutor
    let server: GATTServer
    let channel: LoopbackATTChannel
    let peripheral: Peripheral

    /// `wrap` puts a misbehaving layer between the channel and the server.
    init(_ database: GATTDatabase = .lab(), clientMTU: UInt16 = 517, prepareQueueLimit: Int = 64,
         faults: GATTServer.Faults = .init(), scheduler: ((DispatchQueue) -> any TimerScheduler)? = nil,
         cache: GATTCache? = nil, peer: LEAddress? = nil, sharing other: TestBed? = nil,
         procedureTimeout: Duration? = GATTProcedures.defaultProcedureTimeout,
         wrap: ((GATTServer) -> any SimulatedATTServer)? = nil) {
        executor = other?.executor ?? cache?.executor ?? AdapterExecutor(label: "gatt-test")
        server = other?.server ?? GATTServer(database: database, queue: executor.queue, prepareQueueLimit: prepareQueueLimit, faults: faults)
        channel = LoopbackATTChannel(server: wrap?(server) ?? server, executor: executor)
        peripheral = Peripheral(channel: channel, peer: peer, cache: cache, clientMTU: clientMTU,
                                scheduler: scheduler?(executor.queue), procedureTimeout: procedureTimeout)
    }
}

/// UUIDs of the lab database (Fixtures/peers/scenarios/lab.json).
enum Lab {
    static func uuid(_ n: UInt8) -> BluetoothUUID {
        BluetoothUUID("6E40000\(n)-B5A3-F393-E0A9-E50E24DCCA9E")!
    }
    static let service = ServiceIdentifier(uuid: uuid(1))
    static let pattern = CharacteristicIdentifier(uuid: uuid(2), service: service)
    static let scratch = CharacteristicIdentifier(uuid: uuid(3), service: service)
    static let indicateCounter = CharacteristicIdentifier(uuid: uuid(4), service: service)
    static let secret = CharacteristicIdentifier(uuid: uuid(5), service: service)
    static let notifyCounter = CharacteristicIdentifier(uuid: uuid(6), service: service)
}

/// Captures the `FaultInjectingATTServer` a TestBed builds around its server (`wrap`).
final class FaultsHolder: @unchecked Sendable { // written once during TestBed.init, read afterwards by the same test
    var server: FaultInjectingATTServer?
}
