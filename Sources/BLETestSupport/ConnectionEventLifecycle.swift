import BLECore

extension AsyncStream<ConnectionEvent>.Iterator {
    /// The next lifecycle event (connecting, connected, disconnected, reconnecting...), skipping
    /// the reports of the link set-up that runs in the background after each connection
    /// (data length and PHY changes), whose timing relative to a test's steps is not fixed, and
    /// encryption key sizes (they follow each security change).
    ///
    ///     var events = await link.events().makeAsyncIterator()
    ///     #expect(await events.nextLifecycle() == .disconnected(reason: .connectionTimeout, willReconnect: true))
    public mutating func nextLifecycle() async -> ConnectionEvent? {
        while let event = await next() {
            switch event {
            case .dataLengthChanged, .phyChanged, .encryptionKeySizeChanged: continue
            default: return event
            }
        }
        return nil
    }
}
