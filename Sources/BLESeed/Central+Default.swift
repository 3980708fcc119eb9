#if canImport(Glibc)
import Glibc
#endif
import BLETransport
import BLECore

extension Central {
    /// The transport spec `Central()` opens: `$BLE_DEVICE` when set and not empty, else `hci0`.
    public static var defaultDevice: String {
        guard let value = getenv("BLE_DEVICE").map({ String(cString: $0) }), !value.isEmpty else { return "hci0" }
        return value
    }

    /// The central of `device` (a transport spec, `defaultDevice` when nil), created at once:
    /// its state starts at `.unknown` and the adapter is opened and brought up in the
    /// background. Follow `stateEvents()`: `.poweredOn` when ready, else the state that says
    /// why not (`.unauthorized` without the capability to open it, `.transportLost` when it
    /// cannot be reached), with the reason in `snapshot.reason`.
    ///
    ///     let central = Central()
    ///     for await state in await central.stateEvents() where state == .poweredOn { break }
    public init(device: String? = nil, options: Options = Options()) {
        let spec = device ?? Central.defaultDevice
        var options = options
        if options.resetController == nil, case .hciRaw? = try? TransportSpec.parse(spec) { options.resetController = false }
        self.init(transport: DeferredTransport(spec: spec), options: options)
        Task { [weak self] in try? await self?.powerOn() }
    }
}
