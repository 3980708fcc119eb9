import ATT
import BLECore
import BLETestSupport
import GATTClient
import BLEWire

extension HostileWorkload {
    /// A server that sends indications without waiting for confirmations (Vol 3, Part F,
    /// 3.3.2): Handle Value Indications (3.4.7.2) of 20 value octets, 100 per job, at a
    /// subscriber with the default policy (the newest 1,024) that never reads. Before the
    /// flood the buffer is full and one indication waits for room, unconfirmed: every
    /// indication of the flood arrives before that confirmation and is dropped and counted
    /// (`ATTBearer.droppedPDUCount`), none is confirmed or held. Two lab peripherals: the
    /// healthy link beside sends Write Requests of one octet, awaiting each response.
    static func indicationsWithoutConfirmations(count: Int) async throws -> Result {
        let stack = BenchStack(peripherals: 2, database: .lab())
        try await stack.central.powerOn()
        var peripherals: [Peripheral] = []
        var handles: [UInt16] = []
        for i in 0..<2 {
            let connection = try await stack.central.connect(BenchStack.address(i), timeout: .seconds(5))
            guard let handle = await connection.handle else { throw BenchError("link \(i) lost its handle") }
            peripherals.append(try await Peripheral(connection: connection))
            handles.append(handle)
        }
        let service = ServiceIdentifier(uuid: BluetoothUUID(uuid128: 0x6E40_0001_B5A3_F393_E0A9_E50E24DCCA9E))
        let counter = CharacteristicIdentifier(uuid: BluetoothUUID(uuid128: 0x6E40_0004_B5A3_F393_E0A9_E50E24DCCA9E), service: service)
        let writable = CharacteristicIdentifier(uuid: BluetoothUUID(uuid128: 0x6E40_0003_B5A3_F393_E0A9_E50E24DCCA9E), service: service)
        let hostile = peripherals[0], healthyPeripheral = peripherals[1]
        let valueHandle = try await hostile.resolve(counter).valueHandle
        let stream = try await hostile.subscribe(to: counter, indications: true)
        let bound = 1_024
        func indication(_ i: Int) -> [UInt8] {
            l2capH4(handle: handles[0], channelID: L2CAPChannelID.att,
                    payload: [0x1D, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)] + [UInt8](repeating: UInt8(i & 0xFF), count: 20))
        }
        // Fill the buffer (each confirmed as it is taken), then one more that waits for room;
        // one job each, so that no confirmation finds the link's queue full.
        var filling = Tally()
        await feed(stack, indication(0), times: bound + 1, plan: Plan(), meter: Meter(), tally: &filling)
        guard filling.confirmations == bound else { throw BenchError("\(filling.confirmations) indications confirmed while filling, not \(bound)") }

        let perJob = 100
        let chunk = (0..<perJob).flatMap(indication)
        let servers = stack.servers, vc = stack.vc
        let writes = HealthyLoad(step: { try await healthyPeripheral.write([UInt8]([0x01]), to: writable) },
                                 tidy: { vc.clearRecords(); for s in servers { await s.clearRecords() } })
        let m = try await measure("hostile: indications without waiting for confirmations, at a full buffer (indications)", events: count, healthy: writes) { meter, plan in
            let before = await hostile.bearer.droppedPDUCount
            var tally = Tally()
            meter.start()
            await feed(stack, chunk, times: count / perJob, plan: plan, meter: meter, tally: &tally)
            meter.stop()
            let dropped = await hostile.bearer.droppedPDUCount - before
            return ["droppedAndCounted": Double(dropped), "confirmations": Double(tally.confirmations),
                    "heldForTheSubscriber": Double(bound), "valueOctets": 20]
        }
        withExtendedLifetime(stream) {}
        await stack.close()
        return Result(measurement: m, bounded: true)
    }
}
