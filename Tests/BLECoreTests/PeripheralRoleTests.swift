import Testing
import BLECore
import BLETestSupport
import BLEWire

/// Advertising and peripheral-role links through the virtual controller: the exact commands
/// (Vol 4, Part E, 7.8.5 to 7.8.9 legacy, 7.8.53 to 7.8.58 extended), a remote central's
/// connection (LE Connection Complete with Role 0x01, Advertising Set Terminated), the limits.
@Suite(.timeLimit(.minutes(1)))
struct PeripheralRoleTests {
    static let remoteCentral = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_01), type: .random)
    /// Flags 0x06 and the complete local name "swift": 3 + 7 octets.
    static let data = AdvertisingData([.flags([.leGeneralDiscoverable, .brEDRNotSupported]), .completeLocalName("swift")])
    static let dataBytes: [UInt8] = [0x02, 0x01, 0x06, 0x06, 0x09, 0x73, 0x77, 0x69, 0x66, 0x74]

    static func extendedStack(_ configure: (inout VirtualController.Options) -> Void = { _ in }) async throws -> (VirtualController, Central) {
        try await VC.stack { o in
            o.leFeatures.insert(.leExtendedAdvertising)
            configure(&o)
        }
    }

    /// The commands the stack sent from `opcode` 0x2005..0x203C (advertising), in order.
    static func advertisingCommands(_ vc: VirtualController) -> [HCICommandPacket] {
        vc.commandsReceived.filter { (0x2005...0x200A).contains($0.opcode.rawValue) || (0x2035...0x203C).contains($0.opcode.rawValue) }
    }

    @Test func legacyAdvertisingSendsTheSpecCommands() async throws {
        let (vc, central) = try await VC.stack()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(interval: .milliseconds(100)))
        #expect(set.handle == 0 && !set.usesExtendedCommands)
        let sent = Self.advertisingCommands(vc)
        #expect(sent.map(\.opcode.rawValue) == [0x2006, 0x2008, 0x2009, 0x200A])
        // 7.8.5: 100 ms = 0x00A0 units of 0.625 ms, ADV_IND (0x00), public address, channels 37-39.
        #expect(sent[0].parameters == [0xA0, 0x00, 0xA0, 0x00, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0x07, 0x00])
        #expect(sent[1].parameters == [0x0A] + Self.dataBytes + [UInt8](repeating: 0, count: 21))
        #expect(sent[2].parameters == [0x00] + [UInt8](repeating: 0, count: 31))
        #expect(sent[3].parameters == [0x01])
        #expect(vc.advertisingSets.first?.data == Self.dataBytes)
        #expect(vc.advertisingSets.first?.isEnabled == true)
    }

    @Test func legacyRandomAddressIsSetFirst() async throws {
        let (vc, central) = try await VC.stack()
        let address = BluetoothAddress("C5:04:03:02:01:00")!
        _ = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(kind: .nonConnectable, ownAddress: .staticRandom(address)))
        let sent = Self.advertisingCommands(vc)
        // 7.8.4 then 7.8.5 with Own_Address_Type 0x01 and ADV_NONCONN_IND (0x03); no scan response.
        #expect(sent.map(\.opcode.rawValue) == [0x2005, 0x2006, 0x2008, 0x200A])
        #expect(sent[0].parameters == [0x00, 0x01, 0x02, 0x03, 0x04, 0xC5])
        #expect(Array(sent[1].parameters[4...5]) == [0x03, 0x01])
    }

    @Test func legacyDataLongerThan31OctetsIsRefusedBeforeAnyCommand() async throws {
        let (vc, central) = try await VC.stack()
        let long = AdvertisingData([.manufacturerSpecificData(companyID: 0x05F1, data: [UInt8](repeating: 0xAB, count: 28))]) // 2 + 2 + 28 = 32
        await #expect(throws: AdvertisingError.dataTooLong(scanResponse: false, length: 32, maximum: 31, format: .legacy)) {
            try await central.startAdvertising(long)
        }
        #expect(Self.advertisingCommands(vc).isEmpty)
    }

    @Test func extendedFormatNeedsAControllerWithExtendedAdvertising() async throws {
        let (_, central) = try await VC.stack()
        await #expect(throws: AdvertisingError.self) {
            try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(format: .extended))
        }
        await #expect(throws: AdvertisingError.invalidParameter(field: "scanResponse", reason: "a non-connectable set answers no scan requests: use kind .scannable to send a scan response")) {
            try await central.startAdvertising(Self.data, scanResponse: Self.data, parameters: AdvertisingParameters(kind: .nonConnectable))
        }
    }

    @Test func extendedDataPast251OctetsGoesOutInFragments() async throws {
        let (vc, central) = try await Self.extendedStack()
        // Two AD structures of 1 + 1 + 2 + 196 octets: 400 octets (an AD length octet is at most 255).
        let payload = [UInt8](repeating: 0x5A, count: 196)
        let data = AdvertisingData([.manufacturerSpecificData(companyID: 0x05F1, data: payload), .manufacturerSpecificData(companyID: 0x05F2, data: payload)])
        #expect(data.bytes.count == 400)
        let set = try await central.startAdvertising(data, parameters: AdvertisingParameters(kind: .nonConnectable, format: .extended, txPower: -4))
        #expect(set.usesExtendedCommands && set.selectedTxPower == -4)
        // LE Set Event Mask gained bit 17 (LE Advertising Set Terminated, subevent 0x12) first.
        #expect(vc.hostLEEventMask & (1 << 17) != 0)
        let sent = Self.advertisingCommands(vc)
        #expect(sent.map(\.opcode.rawValue) == [0x203A, 0x203B, 0x2036, 0x2037, 0x2037, 0x2039])
        // Properties 0x0000: extended, non-connectable, non-scannable; TX power 0xFC (-4 dBm).
        #expect(Array(sent[2].parameters[0...2]) == [0x00, 0x00, 0x00])
        #expect(sent[2].parameters[19] == 0xFC)
        #expect(Array(sent[3].parameters.prefix(4)) == [0x00, 0x01, 0x01, 0xFB])
        #expect(Array(sent[4].parameters.prefix(4)) == [0x00, 0x02, 0x01, 0x95])
        #expect(sent[5].parameters == [0x01, 0x01, 0x00, 0x00, 0x00, 0x00])
        #expect(vc.advertisingSets.first?.data == data.bytes)
    }

    @Test func extendedDataAboveTheControllerMaximumIsRefused() async throws {
        let (_, central) = try await Self.extendedStack { $0.maximumAdvertisingDataLength = 100 }
        let data = AdvertisingData([.manufacturerSpecificData(companyID: 0x05F1, data: [UInt8](repeating: 1, count: 100))])
        await #expect(throws: AdvertisingError.dataTooLong(scanResponse: false, length: 104, maximum: 100, format: .extended)) {
            try await central.startAdvertising(data, parameters: AdvertisingParameters(kind: .nonConnectable, format: .extended))
        }
    }

    @Test func theSetLimitIsTheControllers() async throws {
        let (vc, central) = try await Self.extendedStack { $0.advertisingSets = 2 }
        let first = try await central.startAdvertising(Self.data)
        let second = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(kind: .nonConnectable))
        #expect([first.handle, second.handle] == [0, 1])
        await #expect(throws: AdvertisingError.setLimitReached(sets: 2)) { try await central.startAdvertising(Self.data) }
        #expect(vc.advertisingSets.map(\.isEnabled) == [true, true])
        // Stopping one frees its handle: Enable 0 for set 0, then LE Remove Advertising Set.
        try await first.stop()
        let tail = Self.advertisingCommands(vc).suffix(2)
        #expect(tail.map(\.opcode.rawValue) == [0x2039, 0x203C])
        #expect(tail.map(\.parameters) == [[0x00, 0x01, 0x00, 0x00, 0x00, 0x00], [0x00]])
        let third = try await central.startAdvertising(Self.data)
        #expect(third.handle == 0)
    }

    @Test func aRefusedCommandIsATypedErrorAndTheSetIsRemoved() async throws {
        let (vc, central) = try await Self.extendedStack()
        vc.answer(HCIOpcode(rawValue: 0x2039), with: .status(.commandDisallowed), times: 1)
        await #expect(throws: AdvertisingError.command(.commandFailed(opcode: HCIOpcode(rawValue: 0x2039), status: .commandDisallowed))) {
            try await central.startAdvertising(Self.data)
        }
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x203C))
        #expect(await central.advertisingSets.isEmpty)
    }

    @Test func aCentralConnectingGivesAPeripheralRoleConnection() async throws {
        let (vc, central) = try await VC.stack()
        var incoming = await central.incomingConnections().makeAsyncIterator()
        let set = try await central.startAdvertising(Self.data)
        var events = await set.events().makeAsyncIterator()
        let handle = try vc.connectFromCentral(Self.remoteCentral)
        let link = try #require(await incoming.next())
        #expect(link.role == .peripheral)
        #expect(link.peer == Self.remoteCentral)
        #expect(await link.handle == handle)
        guard case .connected(let fromSet)? = await events.next() else { Issue.record("no .connected event"); return }
        #expect(fromSet === link)
        guard case .ended(.connected)? = await events.next() else { Issue.record("the set did not end"); return }
        // The ATT channel is there for a GATT server: a Read Request from the remote central reaches it.
        let channel = try await link.attChannel()
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        await channel.executor.hop { channel.setHandlers(receive: { continuation.yield($0) }, close: { _ in continuation.finish() }) }
        try vc.sendL2CAP(from: Self.remoteCentral, channelID: L2CAPChannelID.att, payload: [0x0A, 0x03, 0x00])
        var received = stream.makeAsyncIterator()
        #expect(await received.next() == [0x0A, 0x03, 0x00])
        // Our answer goes back on CID 0x0004 of that link.
        try await channel.send([0x0B, 0x01])
        let frame = try await vc.waitForL2CAP(channelID: L2CAPChannelID.att)
        #expect(frame.payload == [0x0B, 0x01])
    }

    @Test func advertisingResumesAfterTheLinkWhenAsked() async throws {
        let (vc, central) = try await VC.stack()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(resumeAfterDisconnect: true))
        var events = await set.events().makeAsyncIterator()
        try vc.connectFromCentral(Self.remoteCentral)
        guard case .connected(let link)? = await events.next() else { Issue.record("no .connected event"); return }
        var linkEvents = await link.events().makeAsyncIterator()
        #expect(vc.advertisingSets.first?.isEnabled == false)
        try vc.disconnect(Self.remoteCentral)
        guard case .resumed? = await events.next() else { Issue.record("advertising did not resume"); return }
        #expect(vc.advertisingSets.first?.isEnabled == true)
        #expect(Self.advertisingCommands(vc).filter { $0.opcode.rawValue == 0x200A }.map(\.parameters) == [[0x01], [0x01]])
        var lifecycle: [ConnectionEvent] = []
        while let e = await linkEvents.next() { lifecycle.append(e); if case .disconnected = e { break } }
        #expect(lifecycle.last == .disconnected(reason: .remoteUserTerminatedConnection, willReconnect: false))
    }

    @Test func anExtendedSetLearnsItsLinkFromAdvertisingSetTerminated() async throws {
        let (vc, central) = try await Self.extendedStack { $0.connectionCompleteEvent = .enhancedV2 }
        let set = try await central.startAdvertising(Self.data)
        var events = await set.events().makeAsyncIterator()
        let handle = try vc.connectFromCentral(Self.remoteCentral)
        guard case .connected(let link)? = await events.next() else { Issue.record("no .connected event"); return }
        #expect(await link.handle == handle && link.role == .peripheral)
        guard case .ended(.connected)? = await events.next() else { Issue.record("the set did not end"); return }
        let remove = try await vc.waitForCommand(HCIOpcode(rawValue: 0x203C))
        #expect(remove.parameters == [0x00])
    }

    @Test func durationEndsTheSet() async throws {
        let (vc, central) = try await Self.extendedStack()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(kind: .nonConnectable, duration: .seconds(2)))
        var events = await set.events().makeAsyncIterator()
        // 7.8.56: Duration 200 x 10 ms.
        #expect(Self.advertisingCommands(vc).last?.parameters == [0x01, 0x01, 0x00, 0xC8, 0x00, 0x00])
        await vc.advance(by: .seconds(2))
        guard case .ended(.durationElapsed)? = await events.next() else { Issue.record("the set did not end on its duration"); return }
    }

    @Test func legacyDurationIsTimedByTheHost() async throws {
        let (vc, central) = try await VC.stack()
        let set = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(duration: .seconds(1)))
        var events = await set.events().makeAsyncIterator()
        await vc.advance(by: .seconds(1))
        guard case .ended(.durationElapsed)? = await events.next() else { Issue.record("the set did not end on its duration"); return }
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200A), count: 2)
        #expect(vc.advertisingSets.first?.isEnabled == false)
    }

    @Test func bothRolesAtOnce() async throws {
        let (vc, central) = try await VC.stack()
        _ = try await central.startAdvertising(Self.data, parameters: AdvertisingParameters(resumeAfterDisconnect: true))
        let out = try await central.connect(VC.peer)
        var incoming = await central.incomingConnections().makeAsyncIterator()
        try vc.connectFromCentral(Self.remoteCentral)
        let into = try #require(await incoming.next())
        #expect(out.role == .central && into.role == .peripheral)
        #expect(await out.handle != into.handle)
        #expect(vc.connections.count == 2)
    }

    @Test func thePeripheralAsksTheCentralForNewParameters() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await vc.acceptConnection(on: central, advertising: Self.data, from: Self.remoteCentral)
        let range = ConnectionParameterRange(minimumInterval: 24, maximumInterval: 40, peripheralLatency: 0, supervisionTimeout: 400)
        let request = Task { try await link.requestParameterUpdate(range) }
        let frame = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        // Vol 3, Part A, 4.20: code 0x12, identifier, length 8, Interval Min 24, Interval Max 40,
        // Latency 0, Timeout 400 (0x0190).
        #expect(Array(frame.payload.prefix(1)) + Array(frame.payload.dropFirst(2)) == [0x12, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0x90, 0x01])
        let identifier = frame.payload[1]
        // 4.21: Result 0x0000, accepted.
        try vc.sendSignaling(from: Self.remoteCentral, L2CAPSignalingCommand(identifier: identifier, body: .connectionParameterUpdateResponse(result: 0)))
        try await request.value

        let refused = Task { try await link.requestParameterUpdate(range) }
        let second = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling, count: 2)
        try vc.sendSignaling(from: Self.remoteCentral, L2CAPSignalingCommand(identifier: second.payload[1], body: .connectionParameterUpdateResponse(result: 1)))
        await #expect(throws: ParameterUpdateRequestError.rejected(peer: Self.remoteCentral.address)) { try await refused.value }

        let out = try await central.connect(VC.peer)
        await #expect(throws: ParameterUpdateRequestError.notPeripheral(peer: VC.peer.address)) { try await out.requestParameterUpdate(range) }
    }

    @Test func aParameterRequestEndsWithItsLink() async throws {
        let (vc, central) = try await VC.stack()
        let link = try await vc.acceptConnection(on: central, advertising: Self.data, from: Self.remoteCentral)
        let range = ConnectionParameterRange(minimumInterval: 24, maximumInterval: 40, peripheralLatency: 0, supervisionTimeout: 400)
        let request = Task { try await link.requestParameterUpdate(range) }
        _ = try await vc.waitForL2CAP(channelID: L2CAPChannelID.leSignaling)
        try vc.disconnect(Self.remoteCentral, reason: .connectionTimeout)
        await #expect(throws: ParameterUpdateRequestError.link(.disconnected(peer: Self.remoteCentral.address, reason: .connectionTimeout))) { try await request.value }
    }
}
