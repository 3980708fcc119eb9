extension AdapterReopenPolicy {
    /// For an HCI socket transport (`hci0`, `hci-user:N`, `hci-raw:N`): a signal each time
    /// the kernel registers adapter N (HCI monitor New Index, also sent at open for an adapter
    /// already present). Nil for other transports, or when the monitor channel cannot be
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
            for await event in monitor.events {
                if case .adapterAdded(let adapter, _, _, _) = event, adapter == index { sink.yield() }
            }
            sink.finish()
        }
        sink.onTermination = { _ in
            reader.cancel()
            monitor.close()
        }
        return stream
    }
}
