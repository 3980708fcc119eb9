/// The adapter in one value, pushed on every change: its state, whether it is powered and
/// authorized, and whether the controller is scanning.
///
///     for await s in await central.bluetoothStateEvents() { indicator.isHidden = !s.isScanning }
public struct BluetoothState: Sendable, Hashable, CustomStringConvertible {
    public var adapter: AdapterState
    /// The controller is running a scan for some subscriber.
    public var isScanning: Bool

    public init(adapter: AdapterState, isScanning: Bool) {
        self.adapter = adapter
        self.isScanning = isScanning
    }

    /// Ready: scanning and connecting work.
    public var isPowered: Bool { adapter == .poweredOn }
    /// False when the adapter could not be opened for lack of permission. On Linux that is a
    /// capability of the process (CAP_NET_ADMIN for the HCI user channel), not a prompt.
    public var isAuthorized: Bool { adapter != .unauthorized }

    public var description: String {
        "\(adapter)\(isAuthorized ? "" : ", not authorized")\(isScanning ? ", scanning" : "")"
    }
}

extension Central {
    /// The adapter's state, power, authorization and scanning now.
    public var bluetoothState: BluetoothState {
        BluetoothState(adapter: state, isScanning: scanner.enter(on: executor) { $0.isScanning })
    }

    /// `bluetoothState` now and after every change (a new subscriber first gets the current
    /// value). Ends when the central closes.
    ///
    ///     for await s in await central.bluetoothStateEvents() where s.isPowered { break }
    public func bluetoothStateEvents() -> AsyncStream<BluetoothState> {
        scanner.enter(on: executor) { scanner in
            guard scanner.onScanningChange == nil else { return }
            scanner.onScanningChange = { [weak self, executor] in
                self?.enter(on: executor) { $0.publishBluetoothState() }
            }
        }
        publishBluetoothState()
        return bluetoothStateStream.subscribe()
    }

    /// Pushes `bluetoothState` when it differs from the last value pushed.
    func publishBluetoothState() {
        let value = bluetoothState
        if bluetoothStateStream.latestValue != value { bluetoothStateStream.yield(value) }
    }
}
