import Testing
@testable import BLECore
@testable import BLETransport

/// Batched delivery of scan events: the reports of one transport read are held and released
/// to the consumer together, in order, each once, with the subscriber's buffering policy and
/// drop count applied as they are held. Reports are HCI_LE_Advertising_Report events
/// (Vol 4, Part E, 7.7.65.2) built by `Spec`.
@Suite("Scan batching", .timeLimit(.minutes(1)))
struct ScanBatchingTests {
    /// Five devices in one LE Advertising Report event (Num_Reports 5): one transport read.
    static func fiveReports(round: Int) -> [UInt8] {
        Spec.legacyReports((0..<5).map { i in
            Spec.Legacy(address: "F0:5E:B1:00:00:0\(i)", data: Spec.flags + Spec.manufacturer(0xFFFF, [UInt8(round)]), rssi: -40)
        })
    }

    @Test("The reports of one event reach the consumer in one batch, in order")
    func oneReadOneBatch() async throws {
        let bed = try await ScanBed.make()
        let stream = await bed.central.scan(options: ScanOptions(allowDuplicates: true, bufferingPolicy: .unbounded))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        await bed.central.withScanner { await $0.settled() }
        bed.controller.sendLEMeta(Self.fiveReports(round: 0))
        var iterator = stream.makeAsyncIterator()
        let first = try await iterator.next()
        // The other four came with the first: in hand without waiting.
        var batch = [first?.peripheral.address.address.description]
        while let e = stream.subscription.nextBuffered() { batch.append(e.peripheral.address.address.description) }
        #expect(batch == (0..<5).map { "F0:5E:B1:00:00:0\($0)" })
        await bed.central.close()
    }

    @Test("Across many reads and batch boundaries no report is lost, duplicated or reordered")
    func orderAcrossBatches() async throws {
        let bed = try await ScanBed.make()
        let sub = Collected(await bed.central.scan(options: ScanOptions(allowDuplicates: true, bufferingPolicy: .unbounded)))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        await bed.central.withScanner { await $0.settled() }
        let rounds = 200
        for round in 0..<rounds { bed.controller.sendLEMeta(Self.fiveReports(round: round)) }
        let events = await sub.first(5 * rounds)
        #expect(events.count == 5 * rounds)
        // Event k is device k % 5 in round k / 5: its manufacturer data carries the round.
        let seen = events.map { e -> [Int] in
            let p = e.peripheral
            let device = Int(p.address.address.rawValue & 0xFF)
            let round = Int(p.advertisingData.manufacturerData.first?.data.first ?? 0xFF)
            return [round, device]
        }
        let expected = (0..<rounds).flatMap { round in (0..<5).map { [round & 0xFF, $0] } }
        #expect(seen == expected)
        sub.cancel()
        await bed.central.close()
    }

    @Test("bufferingNewest bounds what is held for a consumer that is behind, and counts the drops")
    func boundAndDropCount() async throws {
        let bed = try await ScanBed.make()
        let slow = await bed.central.scan(options: ScanOptions(allowDuplicates: true, bufferingPolicy: .bufferingNewest(3)))
        let witness = Collected(await bed.central.scan(options: ScanOptions(allowDuplicates: true, bufferingPolicy: .unbounded)))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        await bed.central.withScanner { await $0.settled() }
        for round in 0..<4 { bed.controller.sendLEMeta(Self.fiveReports(round: round)) }
        #expect(await witness.first(20).count == 20)
        #expect(slow.droppedCount == 17)
        await bed.central.withScanner { await $0.stopAll(error: nil) }
        var kept: [String] = []
        for try await event in slow { kept.append(event.peripheral.address.address.description) }
        // Round 3's last three devices: the newest three of twenty.
        #expect(kept == ["F0:5E:B1:00:00:02", "F0:5E:B1:00:00:03", "F0:5E:B1:00:00:04"])
        await bed.central.close()
    }

    @Test("endingWhenFull ends a consumer that is behind with consumerTooSlow, and the scan stops when it was the last")
    func endingWhenFull() async throws {
        let bed = try await ScanBed.make()
        let slow = await bed.central.scan(options: ScanOptions(allowDuplicates: true, bufferingPolicy: .endingWhenFull(2)))
        _ = await bed.controller.scanCommands { $0.count >= 2 }
        await bed.central.withScanner { await $0.settled() }
        bed.controller.sendLEMeta(Self.fiveReports(round: 0))
        let stopped = await bed.controller.scanCommands { $0.count >= 3 }
        #expect(stopped.last == Spec.setScanEnable(false))
        var kept: [String] = []
        await #expect(throws: StreamError.consumerTooSlow(stream: "scan events of subscriber 0", limit: 2)) {
            for try await event in slow { kept.append(event.peripheral.address.address.description) }
        }
        #expect(kept == ["F0:5E:B1:00:00:00", "F0:5E:B1:00:00:01"])
        await bed.central.close()
    }

    @Test("Held values wait for release and then arrive as one batch, after what was queued before")
    func holdAndRelease() async throws {
        let executor = AdapterExecutor(label: "hold-test")
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let s = executor.queue.sync { buffer.subscribe(bufferingPolicy: .bufferingOldest(8)) }
        executor.queue.sync { buffer.yield(0) }
        #expect(try await s.next() == 0)
        // Whether the consumer below waits, is armed or has not asked yet when the values are
        // held, it gets them in one batch once they are released.
        let consumer = Task { () -> [[Int]] in
            // Each inner array: a value returned by next() and the values in hand after it.
            var batches: [[Int]] = []
            while batches.joined().count < 8, let v = try await s.next() {
                var batch = [v]
                while let w = s.nextBuffered() { batch.append(w) }
                batches.append(batch)
            }
            return batches
        }
        // One job: nine values held, one over the bound of eight (bufferingOldest drops it), then released.
        executor.queue.sync {
            for i in 1...9 { buffer.hold(i) }
            buffer.release()
        }
        let batches = try await consumer.value
        #expect(batches == [Array(1...8)])
        #expect(s.droppedCount == 1)
    }
}
