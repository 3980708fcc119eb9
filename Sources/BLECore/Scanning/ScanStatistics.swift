/// How much the shared scan holds now, for monitoring a gateway's memory in a dense scene.
///
///     let s = await central.scanStatistics()
///     print(s.deviceCount, s.subscriberCount)
public struct ScanStatistics: Sendable, Hashable {
    /// Devices in the scan's table (bounded by the lost timeouts and by 1000 entries).
    public var deviceCount: Int
    /// Extended advertisements being reassembled from several reports.
    public var reassemblyCount: Int
    /// `scan` and `discoveredPeripherals` streams being served.
    public var subscriberCount: Int
}

extension Central {
    /// What the shared scan holds now.
    ///
    ///     let s = await central.scanStatistics()
    public func scanStatistics() -> ScanStatistics {
        ScanStatistics(deviceCount: scanner.devices.count, reassemblyCount: scanner.fragments.count, subscriberCount: scanner.subscribers.count)
    }
}
