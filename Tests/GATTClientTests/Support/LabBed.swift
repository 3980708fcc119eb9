import Testing
@testable import BLETestSupport
@testable import BLECore
@testable import BLETransport
import GATTClient
import BLEWire
import GATTServer

/// A `Peripheral` connected through a `Central` to a `GATTServer` (the lab database by
/// default) on the in-process virtual controller. The background link set-up after
/// connecting (LE Read Remote Features, then Data Length and PHY when requested) has ended
/// before the `Peripheral` is made.
///
///     let bed = try await LabBed(.init(reconnect: .always(maxAttempts: 3), clientMTU: 23))
struct LabBed {
    /// What the beds of the suites vary; the defaults are the stack's own.
    struct Options: Sendable {
        /// Time, ACL buffers, packet completion, fragment sizes (manual time by default).
        var controller = VirtualController.Options()
        var database: GATTDatabase = .lab()
        var peer = LabBed.peer
        /// The transport the central runs on: a wrapper around `vc.makeTransport()`, or
        /// `vc.makeSocketTransport()` for real H4 bytes.
        var transport: @Sendable (VirtualController) throws -> any HCITransport = { $0.makeTransport() }
        var reconnect: ReconnectPolicy = .never
        var requestDataLengthExtension = true
        var request2MPHY = true
        var clientMTU: UInt16 = 517
    }

    /// C0:11:22:33:44:77 (random), the peer unless `Options.peer` says otherwise.
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_77), type: .random)
    /// HCI_LE_Create_Connection (Vol 4, Part E, 7.8.12): OGF 0x08, OCF 0x000D.
    static let leCreateConnection = HCIOpcode(rawValue: 0x200D)

    let vc: VirtualController
    let server: GATTServer
    /// Between the simulated peripheral and `server`: passes every PDU through until a test
    /// sets a trigger (`faults.on(_:occurrence:_:)`).
    let faults: FaultInjectingATTServer
    /// Between `faults` and `server`: open until a test closes it to hold the client's PDUs.
    let gate: GatedATTServer
    let transport: any HCITransport
    let central: Central
    let link: Connection
    let peripheral: Peripheral
    let peer: LEAddress

    init(_ options: Options = Options()) async throws {
        vc = VirtualController(options: options.controller)
        peer = options.peer
        server = GATTServer(database: options.database, queue: vc.queue)
        gate = GatedATTServer(server, queue: vc.queue)
        faults = FaultInjectingATTServer(wrapping: gate, queue: vc.queue)
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06], attServer: faults))
        transport = try options.transport(vc)
        central = Central(transport: transport, options: vc.centralOptions())
        try await central.powerOn()
        var parameters = ConnectionRequestParameters()
        parameters.requestDataLengthExtension = options.requestDataLengthExtension
        parameters.request2MPHY = options.request2MPHY
        link = try await central.connect(peer, reconnect: options.reconnect, parameters: parameters)
        // The link set-up after connecting runs in the background: let it end first.
        try await vc.waitForCommand(HCIOpcode(rawValue: 0x2016)) // HCI_LE_Read_Remote_Features (Vol 4, Part E, 7.8.21)
        await vc.settle()
        peripheral = try await Peripheral(connection: link, clientMTU: options.clientMTU)
    }

    /// Reconnects with `policy`; neither Data Length nor 2M PHY is requested, so the set-up
    /// after each (re)connection is LE Read Remote Features alone and races no virtual time.
    init(policy: ReconnectPolicy) async throws {
        try await self.init(Options(reconnect: policy, requestDataLengthExtension: false, request2MPHY: false))
    }

    /// ATT PDUs the host sent on link `handle` (CID 0x0004).
    func attPDUs(on handle: UInt16) -> [[UInt8]] {
        vc.l2capReceived.filter { $0.handle == handle && $0.channelID == L2CAPChannelID.att }.map(\.payload)
    }

    /// The CCCD handle of `characteristic` in the server's own table.
    func cccdHandle(_ characteristic: CharacteristicIdentifier) async throws -> UInt16 {
        let server = self.server
        return try #require(await server.onQueue { server.cccdHandle(of: characteristic.uuid) })
    }

    /// LE Create Connection commands the controller received.
    var createConnectionCount: Int {
        vc.commandsReceived.filter { $0.opcode == Self.leCreateConnection }.count
    }
}
