import GATTClient
import BLEWire
import BLETransport
import BLECore
import BLESeed

/// A scriptable stand-in for the radio, to wire into a real `Central`: the in-process virtual
/// controller behind it, so everything above HCI (host, central, L2CAP, ATT, GATT) runs the
/// production code. Declare peripherals with `FakePeripheral`, then script the adapter's
/// state, discoveries, connection failures and disconnects from here. Time is immediate: a
/// peripheral advertises once when a scan starts or when it is added during one
/// (`simulateDiscovery` advertises again). One central per fake.
///
///     let queue = AdapterExecutor(label: "MyAppTests.rig")
///     let fakeCentral = FakeCentral(queue: queue)
///     let central = Central(backend: fakeCentral, queue: queue)
///     fakeCentral.simulateStateChange(.poweredOn)
public final class FakeCentral: CentralBackend {
    /// The virtual controller behind the fake, for what the fake does not script itself.
    public let controller: VirtualController
    private let states: AsyncStream<AdapterState>
    private let stateContinuation: AsyncStream<AdapterState>.Continuation

    /// A fake whose controller runs on `queue` (give the central the same queue).
    public init(queue: AdapterExecutor, address: BluetoothAddress = BluetoothAddress(rawValue: 0x00_1B_DC_0F_00_01)) {
        var options = VirtualController.Options()
        options.time = .immediate
        controller = VirtualController(address: address, options: options, executor: queue)
        (states, stateContinuation) = AsyncStream.makeStream(of: AdapterState.self)
    }

    // MARK: CentralBackend

    public func makeTransport() -> any HCITransport { controller.makeTransport() }
    public func powerStates() -> AsyncStream<AdapterState> { states }

    // MARK: Adapter state

    /// Puts the adapter in `state`, as the system would: `.poweredOn` brings the controller up
    /// over HCI; `.poweredOff`, `.unauthorized`, `.unsupported` and `.unknown` end every link;
    /// scans end on `.unauthorized` and `.unsupported`, wait on `.unknown` (up to their
    /// `readyTimeout`) and follow `ScanOptions.whenPoweredOff` on `.poweredOff`; `.resetting`
    /// sends HCI Hardware Error (the central then waits for `.poweredOn`, which resets the
    /// controller); `.transportLost` closes the transport for good.
    public func simulateStateChange(_ state: AdapterState) {
        switch state {
        case .resetting: controller.hardwareError()
        case .transportLost: controller.closeTransport()
        default: stateContinuation.yield(state)
        }
    }

    // MARK: Peripherals

    /// Adds `peripheral`: it advertises to scans and accepts connections.
    public func add(_ peripheral: FakePeripheral) {
        let server = peripheral.attach(to: controller)
        controller.addPeripheral(SimulatedPeripheral(
            address: peripheral.address, advertisingData: peripheral.advertisement.bytes,
            isConnectable: peripheral.isConnectable, rssi: peripheral.rssi, attServer: server))
    }

    /// Removes `peripheral`: it stops advertising; a link to it stays until disconnected.
    public func remove(_ peripheral: FakePeripheral) {
        controller.removePeripheral(peripheral.address)
    }

    /// Every added peripheral advertises once more now (scans report those they have not
    /// seen, or whose data changed when duplicates are allowed).
    public func simulateDiscovery() {
        controller.advertiseNow()
    }

    /// The next `count` connection attempts fail with `status` (0x3E, Connection Failed to be
    /// Established, by default).
    public func failNextConnection(status: HCIStatus = .connectionFailedToBeEstablished, count: Int = 1) {
        controller.failConnections(with: status, count: count)
    }

    /// The peripheral ends its link with `reason` (0x08, Connection Timeout, by default: an
    /// unexpected drop that a reconnect policy answers).
    public func simulateDisconnect(_ peripheral: FakePeripheral, reason: HCIStatus = .connectionTimeout) throws(FakeError) {
        do { try controller.disconnect(peripheral.address, reason: reason) } catch { throw .notConnected(peripheral.address) }
    }

    /// Serves the fake's controller on a pseudo-terminal and returns its transport spec, for
    /// code that opens the adapter by name (`Central()` with `$BLE_DEVICE`); the state
    /// changes scripted here reach only a central made with `Central(backend:queue:)`.
    public func servePseudoTerminal() throws(TransportError) -> String {
        try controller.servePseudoTerminal()
    }

    /// Whether the central is connected to `peripheral` now.
    public func isConnected(_ peripheral: FakePeripheral) -> Bool {
        controller.handle(of: peripheral.address) != nil
    }
}
