import Testing
import BLETestSupport
import BLEWire
import BLECore
import ATT

/// The host and central over H4/TCP against Bumble's virtual controller, below the GATT layer.
@Suite(.serialized) struct HostRadioTests {
    @Test func bringUpConnectReadAndDisconnect() async throws {
        try await VirtualRadio.with(scenario: "heart-rate") { radio in
            let central = try await Central.open(radio.transportSpec)
            let info = try #require(await central.controllerInfo)
            // Bumble's host-facing controller reports the address it was given.
            #expect(info.address.description == radio.hostAddress)
            #expect(info.aclPacketLength > 0 && info.aclPacketCount > 0)
            #expect(await central.state == .poweredOn)

            let device = try #require(radio.device("hrm"))
            let peer = try #require(LEAddress(device.address, type: .random))
            let link = try await central.connect(peer, timeout: .seconds(10))
            #expect(await link.isConnected)

            let bearer = ATTBearer(channel: try await link.attChannel(), scheduler: central.host.scheduler)
            let mtu = try await bearer.exchangeMTU()
            #expect(mtu >= 23)
            // Primary services, from handle 1: Read By Group Type 0x2800 (Vol 3, Part G, 4.4.1).
            let response = try await bearer.request(.readByGroupTypeRequest(range: .all, type: BluetoothUUID(uuid16: 0x2800)))
            guard case .readByGroupTypeResponse(let entries) = response else {
                Issue.record("unexpected \(response)")
                return
            }
            let uuids = entries.compactMap { BluetoothUUID(littleEndian: $0.value) }
            #expect(uuids.contains(BluetoothUUID(uuid16: 0x180D)))

            let events = await link.events()
            try await link.disconnect()
            #expect(await !link.isConnected)
            var iterator = events.makeAsyncIterator()
            let first = await iterator.next()
            #expect(first == .disconnected(reason: .remoteUserTerminatedConnection, willReconnect: false))
            await central.close()
        }
    }
}
