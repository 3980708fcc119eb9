/// Scanning: any number of subscribers share one controller scan.
extension Central {
    /// Scans for advertising devices. The controller scan starts with the first subscriber
    /// and stops when the last one stops iterating (or its `options.timeout` passes); every
    /// subscriber has its own filter, de-duplication and lost timeout. The stream fails with
    /// `ScanError` when the adapter is not powered on or the transport is lost, and with the
    /// controller's `HCIError` when it refuses to start the scan. While every subscriber has a
    /// lost timeout, a device not heard for the longest of them leaves the device table (so
    /// rotating private addresses do not pile up); in any case at most 1000 devices are tracked,
    /// beyond that the one heard least recently is dropped and reported `.lost`.
    /// The stream ends when the last reference to it goes, so iterate it directly (as below)
    /// for breaking out of the loop to end the subscription. Events come in batches (one per
    /// transport read), bounded by `options.bufferingPolicy`; see `ScanStream`.
    ///
    ///     for try await event in await central.scan(filter: ScanFilter(nameContains: "Polar")) {
    ///         if case .discovered(let p) = event { print(p); break }
    ///     }
    public func scan(filter: ScanFilter = .all, options: ScanOptions = ScanOptions()) -> ScanStream {
        guard state == .poweredOn else { return .ended(ScanError.adapterNotReady(state), executor: executor) }
        return scanner.enter(on: executor) { $0.subscribe(filter: filter, options: options) }
    }

    /// Scans for devices advertising any of `services` (in a service UUID list or as service data).
    ///
    ///     for try await event in await central.scan(services: [BluetoothUUID("180D")!]) { ... }
    public func scan(services: [BluetoothUUID], options: ScanOptions = ScanOptions()) -> ScanStream {
        scan(filter: ScanFilter(services: services), options: options)
    }

    /// The devices found so far, strongest (smoothed RSSI) first, for list UIs: an empty list
    /// at once, then a new list at most every `interval` while something changes. Devices
    /// not heard for `options.lostTimeout` leave the list. Subscribing keeps a scan running
    /// like a `scan` subscriber; the stream just ends when the adapter closes.
    ///
    ///     for await list in await central.discoveredPeripherals() { table.reload(list) }
    public func discoveredPeripherals(filter: ScanFilter = .all,
                                      options: ScanOptions = ScanOptions(lostTimeout: .seconds(10)),
                                      interval: Duration = .milliseconds(250)) -> AsyncStream<[DiscoveredPeripheral]> {
        guard state == .poweredOn else { return AsyncStream { $0.finish() } }
        return scanner.enter(on: executor) { $0.subscribeSnapshots(filter: filter, options: options, interval: interval) }
    }
}
