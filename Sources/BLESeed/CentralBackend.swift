import BLETransport
import BLECore

/// A controller for a `Central` other than an adapter, such as a test double: it hands the
/// central a transport and reports the power state the central should be in (the system's
/// Bluetooth switch, its permission, its support), which the central follows.
///
///     let central = Central(backend: fakeCentral, queue: queue)
public protocol CentralBackend: AnyObject, Sendable {
    /// The host end of the transport to the backend's controller.
    func makeTransport() -> any HCITransport
    /// The states the backend reports, in order (see `Central.init(backend:queue:options:)`).
    func powerStates() -> AsyncStream<AdapterState>
    /// `base` with what the backend needs of the central (its scheduler, for example).
    func centralOptions(_ base: Central.Options) -> Central.Options
}

extension CentralBackend {
    public func centralOptions(_ base: Central.Options) -> Central.Options { base }
}

extension Central {
    /// A central over `backend`'s controller, on `queue`. Its state starts at `.unknown` and
    /// follows what the backend reports: `.poweredOn` brings the controller up over HCI (reset
    /// and configuration, as for an adapter); `.poweredOff`, `.unauthorized`, `.unsupported`
    /// and `.unknown` end every link (no reconnect) and take that state; scans end with
    /// `ScanError.adapterNotReady` on `.unauthorized` and `.unsupported`, wait (up to their
    /// `readyTimeout`) on `.unknown`, and follow `ScanOptions.whenPoweredOff` on `.poweredOff`;
    /// `.resetting` and `.transportLost` are taken as they are (a backend produces them at
    /// HCI: a Hardware Error event, a closed transport).
    ///
    ///     let queue = AdapterExecutor(label: "MyAppTests.rig")
    ///     let central = Central(backend: fakeCentral, queue: queue)
    public init(backend: any CentralBackend, queue: AdapterExecutor, options: Options = Options()) {
        var options = backend.centralOptions(options)
        options.executor = queue
        self.init(transport: backend.makeTransport(), options: options)
        let states = backend.powerStates()
        Task { [weak self] in
            for await state in states {
                guard let self else { return }
                await self.follow(state)
            }
        }
    }
}
