import BLEWire

/// Scanning: any number of subscribers share one controller scan.
extension Central {
    /// Scans for advertising devices. The controller scan starts with the first subscriber
    /// and stops when the last one stops iterating (or its `options.timeout` passes); every
    /// subscriber has its own filter, de-duplication and lost timeout. While the adapter is
    /// `.unknown` (not opened yet) or `.resetting`, the scan waits for `.poweredOn`, at most
    /// `options.readyTimeout` (then `ScanError.notReadyInTime`). The stream fails with
    /// `ScanError.adapterNotReady` when the adapter is `.unauthorized`, `.unsupported` or
    /// `.poweredOff` (unless `options.whenPoweredOff` is `.wait`), with
    /// `ScanError.transportLost` when the transport is lost, and with the controller's
    /// `HCIError` when it refuses to start the scan. While every subscriber has a
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
        if let refusal = scanRefusal(options) { return .ended(refusal, executor: executor) }
        letBackgroundAttemptsMakeWayForScans()
        return scanner.subscribe(filter: filter, options: options)
    }

    /// The devices found so far, strongest (smoothed RSSI) first, for list UIs: an empty list
    /// at once, then a new list at most every `interval` while something changes. Devices
    /// not heard for `options.lostTimeout` leave the list. Subscribing keeps a scan running
    /// like a `scan` subscriber, and waits for the adapter as `scan` does; the stream just ends
    /// (it has no error to throw) where a `scan` stream would fail.
    ///
    /// The list form of a scan (the async BLE kit's peripheral stream, and the `ble scan`
    /// table's feed); for each advertisement as it comes, scan with `scan(filter:options:)`.
    ///
    ///     for await list in await central.discoveredPeripherals() { table.reload(list) }
    public func discoveredPeripherals(filter: ScanFilter = .all,
                                      options: ScanOptions = ScanOptions(lostTimeout: .seconds(10)),
                                      interval: Duration = .milliseconds(250)) -> AsyncStream<[DiscoveredPeripheral]> {
        guard scanRefusal(options) == nil else { return AsyncStream { $0.finish() } }
        letBackgroundAttemptsMakeWayForScans()
        return scanner.subscribeSnapshots(filter: filter, options: options, interval: interval)
    }

    /// Why a scan asked for now ends at once, or nil when it starts or waits for the adapter.
    func scanRefusal(_ options: ScanOptions) -> ScanError? {
        switch state {
        case .poweredOn, .unknown, .resetting:
            return nil
        case .poweredOff:
            let waits = options.whenPoweredOff == .wait && !scanner.closed
            return waits ? nil : .adapterNotReady(.poweredOff)
        case .unauthorized, .unsupported, .transportLost:
            return .adapterNotReady(state)
        }
    }
}
