import Testing
import GATTClient
import BLETestSupport
import BLEWire
import ATT

@Suite struct ErrorResponseTests {
    @Test func readNotPermittedAndWriteNotPermitted() async throws {
        let bed = TestBed(.heartRateMonitor())
        let hr = ServiceIdentifier(uuid: "180D")
        let measurement = CharacteristicIdentifier(uuid: "2A37", service: hr)
        do {
            _ = try await bed.peripheral.read(measurement)
            Issue.record("the read should fail")
        } catch {
            #expect(error.description == "Read Not Permitted (0x02) reading Heart Rate Measurement (2A37) at handle 0x000E on F0:F1:F2:F3:F4:F5")
        }
        let location = CharacteristicIdentifier(uuid: "2A38", service: hr)
        #expect(try await bed.peripheral.read(location, as: BodySensorLocation.self) == .chest)
        do {
            try await bed.peripheral.write([0x02], to: location)
            Issue.record("the write should fail")
        } catch {
            #expect(error.attErrorCode == .writeNotPermitted)
        }
    }

    @Test func descriptorReadAndRefusedWrite() async throws {
        let bed = TestBed()
        let userDescription = DescriptorIdentifier(uuid: GATTAttributeType.userDescription, characteristic: Lab.scratch)
        #expect(try await bed.peripheral.readDescriptor(userDescription) == Array("512-byte scratch".utf8))
        do {
            try await bed.peripheral.writeDescriptor("x", to: userDescription)
            Issue.record("the write should fail")
        } catch {
            #expect(error.attErrorCode == .writeNotPermitted)
        }
        let missing = DescriptorIdentifier(uuid: GATTAttributeType.clientCharacteristicConfiguration, characteristic: Lab.scratch)
        do {
            _ = try await bed.peripheral.readDescriptor(missing)
            Issue.record("the read should fail")
        } catch {
            guard case .descriptorNotFound(_, _, _, let available) = error else { Issue.record("\(error)"); return }
            #expect(available == [GATTAttributeType.userDescription])
        }
    }

    @Test func readMultipleVariableAndFixed() async throws {
        let bed = TestBed(.heartRateMonitor())
        let dis = ServiceIdentifier(uuid: "180A")
        let chars = try (["2A29", "2A24", "2A26"] as [String]).map { s throws(GATTError) in try CharacteristicIdentifier(uuid: s, service: dis) }
        let values = try await bed.peripheral.read(chars)
        #expect(values.map { String(decoding: $0, as: UTF8.self) } == ["Virtual Sensors", "HRM-1", "1.2.3"])
        #expect(await bed.server.receivedOpcodes().contains(.readMultipleVariableRequest))
        // Read Multiple concatenates; the client knows the lengths.
        var handles: [UInt16] = []
        for c in chars.prefix(2) { handles.append(try await bed.peripheral.resolve(c).valueHandle) }
        let concatenated = try await GATTProcedures(bearer: await bed.peripheral.bearer).readMultiple(handles: handles)
        #expect(concatenated == Array("Virtual SensorsHRM-1".utf8))
        // Read Using Characteristic UUID.
        let byType = try await GATTProcedures(bearer: await bed.peripheral.bearer).read(type: BluetoothUUID("2A24")!)
        #expect(byType.map(\.value) == [Array("HRM-1".utf8)])
    }
}

@Suite struct ServerConformanceTests {
    @Test func readBlobPastTheEndIsInvalidOffset() async throws {
        let bed = TestBed()
        let valueHandle = try await bed.peripheral.resolve(Lab.pattern).valueHandle
        let bearer = await bed.peripheral.bearer
        // 600-byte value: offset 600 is the end (empty part), 601 is past it (Vol 3, Part F, 3.4.4.5).
        #expect(try await bearer.request(.readBlobRequest(handle: valueHandle, offset: 600)) == .readBlobResponse(value: []))
        await #expect(throws: ATTError.errorResponse(code: .invalidOffset, handle: valueHandle, request: .readBlobRequest)) {
            _ = try await bearer.request(.readBlobRequest(handle: valueHandle, offset: 601))
        }
        await #expect(throws: ATTError.errorResponse(code: .invalidHandle, handle: 0x0400, request: .readRequest)) {
            _ = try await bearer.request(.readRequest(handle: 0x0400))
        }
        await #expect(throws: ATTError.errorResponse(code: .unsupportedGroupType, handle: 1, request: .readByGroupTypeRequest)) {
            _ = try await bearer.request(.readByGroupTypeRequest(range: .all, type: GATTAttributeType.characteristic))
        }
    }

    @Test func characteristicsByUUID() async throws {
        let bed = TestBed()
        let service = try await bed.peripheral.resolve(Lab.service)
        let procedures = GATTProcedures(bearer: await bed.peripheral.bearer)
        let found = try await procedures.discoverCharacteristics(of: service, uuid: Lab.uuid(5))
        #expect(found.map(\.valueHandle) == [24])
        #expect(found.first?.endHandle == 25)
    }
}
