import BLETransport
extension AdapterReopenPolicy {
    /// For an HCI socket transport (`hci0`, `hci-user:N`, `hci-raw:N`): a signal each time
    /// the kernel registers adapter N (HCI monitor New Index, also sent at open for an adapter
    /// already present), and again when the kernel has set it up and closed it (see
    /// `AdapterAppearanceFilter`). Nil for other transports, or when the monitor channel cannot be
    /// opened (it needs CAP_NET_RAW), which leaves the backoff alone. The monitor closes when
    /// the stream's reader stops.
    ///
    ///     let policy = AdapterReopenPolicy(appearances: AdapterReopenPolicy.kernelAppearances)
    @Sendable public static func kernelAppearances(_ transport: String) -> AsyncStream<Void>? {
        let index: Int
        switch try? TransportSpec.parse(transport) {
        case .hciUser(let i)?, .hciRaw(let i)?: index = i
        default: return nil
        }
        guard let monitor = try? HCIMonitor.open() else { return nil }
        let (stream, sink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let reader = Task {
            var filter = AdapterAppearanceFilter(adapter: index)
            for await event in monitor.events where filter.isAppearance(event) { sink.yield() }
            sink.finish()
        }
        sink.onTermination = { _ in
            reader.cancel()
            monitor.close()
        }
        return stream
    }
}

/// Which HCI monitor records tell that adapter N is back. New Index: the kernel registered it
/// (an attempt may still get EBUSY while the kernel opens it and runs its setup). The first
/// Close Index after it: the setup is over and the kernel closed the adapter, so the user
/// channel can be bound now. Only the first: a failed attempt of our own that bound the
/// adapter closes it too, and must not restart the backoff.
///
///     var filter = AdapterAppearanceFilter(adapter: 0)
///     if filter.isAppearance(event) { reopenNow() }
struct AdapterAppearanceFilter {
    let adapter: Int
    private var registered = false

    init(adapter: Int) { self.adapter = adapter }

    mutating func isAppearance(_ event: HCIMonitor.Event) -> Bool {
        switch event {
        case .adapterAdded(adapter, _, _, _):
            registered = true
            return true
        case .adapterClosed(adapter) where registered:
            registered = false
            return true
        case .adapterRemoved(adapter):
            registered = false
            return false
        default:
            return false
        }
    }
}
