import Testing
import Dispatch
import GATTClient
@testable import BLETestSupport
import BLEWire
import BLECore
import ATT
import GATTServer

@Suite struct ReadWriteTests {
    static let pattern = (0..<600).map { UInt8(truncatingIfNeeded: $0) }

    @Test(arguments: [UInt16(517), 23])
    func longRead600Bytes(mtu: UInt16) async throws {
        let bed = TestBed(clientMTU: mtu)
        #expect(try await bed.peripheral.read(Lab.pattern) == Self.pattern)
        let opcodes = await bed.server.receivedOpcodes()
        // Read, then Read Blob while each part fills ATT_MTU - 1 octets (Vol 3, Part G, 4.8.3).
        let blobs = opcodes.filter { $0 == .readBlobRequest }.count
        #expect(blobs == (mtu == 517 ? 1 : 600 / 22))
    }

    @Test(arguments: [UInt16(517), 23])
    func longWrite512BytesReadsBack(mtu: UInt16) async throws {
        let bed = TestBed(clientMTU: mtu)
        let value = (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        try await bed.peripheral.writeLong(value, to: Lab.scratch)
        #expect(try await bed.peripheral.read(Lab.scratch) == value)
        let opcodes = await bed.server.receivedOpcodes()
        // ATT_MTU - 5 octets per Prepare Write Request (Vol 3, Part G, 4.9.4).
        let chunk = Int(mtu) - 5
        #expect(opcodes.filter { $0 == .prepareWriteRequest }.count == (512 + chunk - 1) / chunk)
        #expect(opcodes.filter { $0 == .executeWriteRequest }.count == 1)
    }

    @Test func reliableWriteExecutesOnce() async throws {
        let s = BluetoothUUID("FFF0")!, a = BluetoothUUID("FFF1")!, b = BluetoothUUID("FFF2")!
        let db = GATTDatabase(services: [.init(uuid: s, characteristics: [
            .init(uuid: a, properties: [.read, .write], value: [0]),
            .init(uuid: b, properties: [.read, .write], value: [0]),
        ])])
        let bed = TestBed(db, clientMTU: 23)
        let service = ServiceIdentifier(uuid: s)
        let ca = CharacteristicIdentifier(uuid: a, service: service), cb = CharacteristicIdentifier(uuid: b, service: service)
        let long = [UInt8](repeating: 0xAB, count: 40)
        try await bed.peripheral.reliableWrite([(ca, [1, 2, 3]), (cb, long)])
        #expect(try await bed.peripheral.read(ca) == [1, 2, 3])
        #expect(try await bed.peripheral.read(cb) == long)
        let opcodes = await bed.server.receivedOpcodes()
        #expect(opcodes.filter { $0 == .prepareWriteRequest }.count == 1 + 3)
        #expect(opcodes.filter { $0 == .executeWriteRequest }.count == 1)
    }

    @Test func writeWithoutResponseKeepsEveryWriteInOrder() async throws {
        let bed = TestBed()
        for i in 0..<200 { try await bed.peripheral.write([UInt8(i)], to: Lab.scratch, type: .withoutResponse) }
        #expect(await bed.server.waitUntil("200 writes applied") { $0.writes.filter { $0.handle == 17 }.count == 200 })
        #expect(await bed.server.appliedWrites().filter { $0.handle == 17 }.map(\.value) == (0..<200).map { [UInt8($0)] })
        let tooLong = [UInt8](repeating: 1, count: 600)
        await #expect(throws: GATTError.self) { try await bed.peripheral.write(tooLong, to: Lab.scratch, type: .withoutResponse) }
        #expect(try await bed.peripheral.maximumWriteValueLength(for: .withoutResponse) == 514)
    }

    @Test func encryptionRequiredNamesTheError() async throws {
        let bed = TestBed()
        do {
            _ = try await bed.peripheral.read(Lab.secret)
            Issue.record("the read should fail")
        } catch {
            #expect(error.attErrorCode == .insufficientEncryption)
            #expect(error.description == "Insufficient Encryption (0x0F) reading 6E400005-B5A3-F393-E0A9-E50E24DCCA9E at handle 0x0018 on F0:F1:F2:F3:F4:F5; pair or encrypt the link, then retry")
        }
        bed.channel.serverLink.isEncrypted = true
        #expect(try await bed.peripheral.read(Lab.secret, as: String.self) == "secret")
    }

    @Test func authenticationRequiredNamesTheCharacteristic() async throws {
        let db = GATTDatabase(services: [.init(uuid: BluetoothUUID("180D")!, characteristics: [
            .init(uuid: BluetoothUUID("2A37")!, properties: [.read], permissions: [.read, .readAuthenticated], value: [0, 60]),
        ])])
        let bed = TestBed(db)
        let hr = ServiceIdentifier(uuid: "180D")
        do {
            _ = try await bed.peripheral.read(CharacteristicIdentifier(uuid: "2A37", service: hr))
            Issue.record("the read should fail")
        } catch {
            #expect(error.description.hasPrefix("Insufficient Authentication (0x05) reading Heart Rate Measurement (2A37) at handle 0x0009 on F0:F1:F2:F3:F4:F5"))
        }
    }

    @Test func controlPointRejectsWithApplicationError() async throws {
        let bed = TestBed(.heartRateMonitor())
        let cp = CharacteristicIdentifier(uuid: "2A39", service: ServiceIdentifier(uuid: "180D"))
        try await bed.peripheral.write([0x01], to: cp)
        do {
            try await bed.peripheral.write([0x02], to: cp)
            Issue.record("the write should fail")
        } catch {
            #expect(error.attErrorCode == ATTErrorCode(0x80))
        }
    }

    @Test func badPrepareEchoCancelsTheQueue() async throws {
        for fault in [GATTServer.EchoFault.handle, .offset, .value] {
            let bed = TestBed(clientMTU: 23, faults: .init(prepareWriteEcho: fault))
            do {
                try await bed.peripheral.writeLong([UInt8](repeating: 9, count: 100), to: Lab.scratch)
                Issue.record("the long write should fail")
            } catch {
                guard case .malformed(_, _, _, let detail) = error else { Issue.record("\(error)"); continue }
                #expect(detail.contains("Prepare Write Response echoed"))
            }
            // One Prepare Write, then Execute Write (cancel): nothing was written.
            #expect(await bed.server.receivedOpcodes().suffix(2) == [.prepareWriteRequest, .executeWriteRequest])
            #expect(await bed.server.appliedWrites().filter { $0.handle == 17 }.isEmpty)
            #expect(await bed.server.value(of: Lab.uuid(3)) == [UInt8](repeating: 0, count: 512))
        }
    }

    @Test func prepareQueueFullFailsAndCancels() async throws {
        let bed = TestBed(clientMTU: 23, prepareQueueLimit: 4)
        do {
            try await bed.peripheral.write([UInt8](repeating: 5, count: 512), to: Lab.scratch)
            Issue.record("the long write should fail")
        } catch {
            #expect(error.attErrorCode == .prepareQueueFull)
            #expect(error.description.hasPrefix("Prepare Queue Full (0x09) writing UART TX Characteristic (6E400003-B5A3-F393-E0A9-E50E24DCCA9E) at handle 0x0011 on F0:F1:F2:F3:F4:F5"))
        }
        let opcodes = await bed.server.receivedOpcodes()
        #expect(opcodes.filter { $0 == .prepareWriteRequest }.count == 5)
        #expect(opcodes.last == .executeWriteRequest)
        #expect(await bed.server.appliedWrites().filter { $0.handle == 17 }.isEmpty)
    }

    @Test func silentPeerTimesOutAfter30Seconds() async throws {
        let holder = SchedulerHolder()
        let bed = TestBed(faults: .init(stopAnsweringAfter: 1), scheduler: { holder.make($0) })
        let scheduler = try #require(holder.scheduler)
        let read = Task { () -> GATTError? in
            do throws(GATTError) { _ = try await bed.peripheral.read(Lab.pattern); return nil } catch { return error }
        }
        #expect(await bed.server.waitUntil("the discovery request was sent") { $0.log.count == 2 })
        await scheduler.advance(by: .seconds(29))
        // The transaction timer and the discovery's overall limit (300 s).
        #expect(await scheduler.pendingCount() == 2)
        await scheduler.advance(by: .seconds(1))
        let error = await read.value
        guard case .timeout(let op, let target, let peer) = error else { Issue.record("\(String(describing: error))"); return }
        #expect(op == .discovering && target == .services(.all) && peer == BluetoothAddress("F0:F1:F2:F3:F4:F5"))
    }
}

/// Captures the ManualScheduler a TestBed builds on its queue.
final class SchedulerHolder: @unchecked Sendable { // written once during TestBed.init, read afterwards by the same test
    var scheduler: ManualScheduler?
    func make(_ queue: DispatchQueue) -> any TimerScheduler {
        let s = ManualScheduler(queue: queue)
        scheduler = s
        return s
    }
}
