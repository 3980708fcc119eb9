@testable import BLETestSupport
import BLECore
import BLEWire

/// One link from a Central to a simulated peripheral on the in-process virtual controller,
/// ready for SMP: connected without data length or PHY requests, and the controller's
/// LE Read Remote Features (0x2016) already seen, so the only traffic left is the test's own.
///
/// A suite holds the fixture (and so `central`, as long as the link is used: a link holds its
/// Central weakly).
///
///     let fixture = try await SMPLinkFixture(peer: Self.peer)
///     try fixture.sendSMP([0x05, 0x01])
struct SMPLinkFixture {
    let peer: LEAddress
    let vc: VirtualController
    let central: Central
    let link: Connection

    /// The connection parameters of every link the fixture makes.
    static var parameters: ConnectionRequestParameters {
        var parameters = ConnectionRequestParameters()
        parameters.requestDataLengthExtension = false
        parameters.request2MPHY = false
        return parameters
    }

    init(peer: LEAddress) async throws {
        self.peer = peer
        vc = VirtualController()
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06]))
        central = try await vc.poweredOnCentral()
        link = try await central.connect(peer, parameters: Self.parameters)
        try await vc.waitForCommand(HCIOpcode(rawValue: 0x2016))
        await vc.settle()
    }

    /// A new link from `central` to `peer` with the same parameters (after the first ended).
    func connectAgain() async throws -> Connection {
        let link = try await central.connect(peer, parameters: Self.parameters)
        await vc.settle()
        return link
    }

    /// The peer sends `payload` on the SMP channel (0x0006).
    func sendSMP(_ payload: [UInt8]) throws {
        try vc.sendL2CAP(from: peer, channelID: L2CAPChannelID.securityManager, payload: payload)
    }

    /// Every SMP PDU this side sent, once there are at least `count`.
    func smpSent(count: Int) async throws -> [[UInt8]] {
        _ = try await vc.waitForL2CAP(channelID: L2CAPChannelID.securityManager, count: count)
        return vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.securityManager }.map(\.payload)
    }

    /// How many SMP PDUs this side sent so far.
    var smpSentCount: Int { vc.l2capReceived.filter { $0.channelID == L2CAPChannelID.securityManager }.count }
}
