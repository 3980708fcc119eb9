import Testing
import GATTClient
@testable import BLETestSupport
import BLEWire
import BLESeed

@Suite struct NotificationTests {
    @Test func oneSubscriberGetsEveryNotificationInOrder() async throws {
        let bed = TestBed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        #expect(await bed.server.clientConfigurations(of: Lab.uuid(6)) == [0x0001])
        for i in 1...5 { #expect(await bed.server.notify(characteristic: Lab.uuid(6), value: UInt32(i).gattValue) == 1) }
        var got: [UInt32] = []
        for try await v in stream {
            got.append(try UInt32(gattValue: v))
            if got.count == 5 { break }
        }
        #expect(got == [1, 2, 3, 4, 5])
    }

    @Test func sixteenSubscribersShareOneCCCDWriteWhichIsClearedAfterTheLast() async throws {
        let bed = TestBed()
        var streams: [NotificationStream<[UInt8]>] = []
        for _ in 0..<16 { streams.append(try await bed.peripheral.subscribe(to: Lab.notifyCounter)) }
        let cccdHandle: UInt16 = 28
        #expect(await bed.server.appliedWrites().filter { $0.handle == cccdHandle }.map(\.value) == [[0x01, 0x00]])
        for i in 1...3 { await bed.server.notify(characteristic: Lab.uuid(6), value: [UInt8(i), 0, 0, 0]) }
        let results = await withTaskGroup(of: [[UInt8]].self) { group in
            for s in streams {
                group.addTask {
                    var got: [[UInt8]] = []
                    do { for try await v in s { got.append(v); if got.count == 3 { break } } } catch {}
                    return got
                }
            }
            var all: [[[UInt8]]] = []
            for await r in group { all.append(r) }
            return all
        }
        streams.removeAll()
        #expect(results.count == 16)
        #expect(results.allSatisfy { $0 == [[1, 0, 0, 0], [2, 0, 0, 0], [3, 0, 0, 0]] })
        // Every consumer left: the CCCD goes back to 0x0000, written once more.
        #expect(await bed.server.waitUntil("CCCD cleared") { $0.cccdValues(of: Lab.uuid(6)) == [0] })
        #expect(await bed.server.appliedWrites().filter { $0.handle == cccdHandle }.map(\.value) == [[0x01, 0x00], [0x00, 0x00]])
    }

    @Test func lazyTypedStreamSubscribesOnIteration() async throws {
        let bed = TestBed(.heartRateMonitor())
        let hr = ServiceIdentifier(uuid: "180D")
        let measurement = CharacteristicIdentifier(uuid: "2A37", service: hr)
        let readings: AsyncThrowingStream<HeartRateMeasurement, any Error> = bed.peripheral.notifications(for: measurement)
        let consumer = Task {
            var bpm: [UInt16] = []
            for try await r in readings { bpm.append(r.beatsPerMinute); if bpm.count == 2 { break } }
            return bpm
        }
        #expect(await bed.server.waitUntil("subscribed") { $0.cccdValues(of: BluetoothUUID("2A37")!) == [1] })
        await bed.server.notify(characteristic: BluetoothUUID("2A37")!, value: [0x00, 72])
        await bed.server.notify(characteristic: BluetoothUUID("2A37")!, value: [0x01, 0x2C, 0x01])
        #expect(try await consumer.value == [72, 300])
    }

    @Test func indicationsAreConfirmed() async throws {
        let bed = TestBed()
        let stream = try await bed.peripheral.subscribe(to: Lab.indicateCounter, indications: true)
        #expect(await bed.server.clientConfigurations(of: Lab.uuid(4)) == [0x0002])
        #expect(await bed.server.indicate(characteristic: Lab.uuid(4), value: [7]) == 1)
        var it = stream.makeAsyncIterator()
        #expect(try await it.next() == [7])
        #expect(await bed.server.receivedOpcodes().last == .handleValueConfirmation)
    }

    @Test func notifyOnAnIndicateOnlyCharacteristicIsRefused() async throws {
        let bed = TestBed()
        do {
            _ = try await bed.peripheral.subscribe(to: Lab.indicateCounter)
            Issue.record("should be refused")
        } catch {
            guard case .notSupported = error else { Issue.record("\(error)"); return }
        }
    }

    @Test func disconnectEndsStreamsAndPendingCalls() async throws {
        let bed = TestBed()
        let stream = try await bed.peripheral.subscribe(to: Lab.notifyCounter)
        await bed.channel.disconnect(reason: .remoteUserTerminatedConnection)
        var it = stream.makeAsyncIterator()
        do {
            _ = try await it.next()
            Issue.record("the stream should throw")
        } catch let error as GATTError {
            guard case .disconnected(let peer, _) = error else { Issue.record("\(error)"); return }
            #expect(peer == BluetoothAddress("F0:F1:F2:F3:F4:F5"))
        }
        await #expect(throws: GATTError.self) { _ = try await bed.peripheral.read(Lab.pattern) }
    }

    @Test func writeAndAwaitNotificationSubscribesFirst() async throws {
        let bed = TestBed()
        let responder = Task {
            #expect(await bed.server.waitUntil("write applied") { $0.writes.contains { $0.value == [0x42] } })
            await bed.server.notify(characteristic: Lab.uuid(6), value: [0x42, 0, 0, 0])
        }
        let reply = try await bed.peripheral.writeAndAwaitNotification([0x42], to: Lab.scratch, response: Lab.notifyCounter)
        await responder.value
        #expect(reply == [0x42, 0, 0, 0])
        // The CCCD write came before the value write (handle 9 is Service Changed's CCCD).
        let writes = await bed.server.appliedWrites().map(\.handle).filter { $0 != 9 }
        #expect(writes.prefix(2) == [28, 17])
    }
}
