import BLETransport

/// The host's limits against misbehaving peers and controllers, and what they counted: one
/// value kept by `HCIHost`, read and set through its methods (see `HCIHost+ACL.swift` and
/// `HCIHost+L2CAP.swift`).
struct HostSafeguards {
    /// How long a PDU may wait on its link for a controller buffer before it fails with
    /// `LinkError.sendTimeout`.
    var sendTimeout: Duration = .seconds(30)
    /// Bytes of ACL data one link may hold in its queue (one PDU is always taken when the
    /// queue is empty, whatever its size).
    var linkQueueLimit = 64 * 1024
    /// PDUs one link may hold in its queue: each waiting send keeps a suspended task, so small
    /// PDUs must not let thousands wait under the byte bound.
    var linkQueuePDULimit = 256
    /// Interval of the rate-limited log lines.
    var logLimiter = LogRateLimiter<HostLogKind>(interval: .seconds(10))
    /// Links another host on the same adapter made (`hci-raw`): ignored, never answered.
    var foreignHandles: Set<UInt16> = []
    /// Inbound PDUs dropped by reassembly, the oversized ones included.
    var inboundDrops = 0
    /// PDUs refused because the L2CAP length exceeds what the destination channel accepts.
    var oversizedPDUs = 0
    /// Partial PDUs thrown away: a start fragment before they completed, a continuation that
    /// overran them, their link closing.
    var partialPDUDiscards = 0
    /// PDUs that failed with `sendTimeout`, and the host's own PDUs that found the queue full.
    var sendTimeouts = 0
    var queueOverflows = 0
    /// Credit-based channels ended because their K-frames failed with `sendTimeout`.
    var timedOutChannels = 0
    /// Numbers the LE Connection Updates started for parameter update requests.
    var parameterUpdateAttempts: UInt64 = 0
}

/// The kinds of log line that a hostile peer or controller can repeat at will; each is
/// written at most once per interval (`LogRateLimiter`).
enum HostLogKind: Hashable, Sendable {
    case undecodableEvent, unknownHandle, foreignHandle, reassembly, malformedSignaling
    case unsupportedChannel, sendTimeout, queueFull, parameterUpdate, signalingRejected, pairingRefused
    case controllerMiscount
}

extension HCIHost {
    /// Writes `message` at `level` unless a line of `kind` was written within the interval;
    /// the next line written says how many were suppressed.
    func logLimited(_ kind: HostLogKind, _ level: LogLevel, _ message: @autoclosure () -> String,
                    file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard logger.isEnabled(level), let suppressed = safeguards.logLimiter.admit(kind, now: scheduler.now()) else { return }
        logger.log(level, LogRateLimiter<HostLogKind>.line(message(), suppressed: suppressed, interval: safeguards.logLimiter.interval),
                   file: file, function: function, line: line)
    }

    /// How long a PDU may wait for a controller buffer (default 30 s), and how much one link
    /// may queue: bytes of ACL data (default 64 KiB) and PDUs (default 256). A PDU past either
    /// bound fails at once with `LinkError.queueFull`.
    ///
    ///     await host.setACLLimits(sendTimeout: .seconds(10), linkQueueBytes: 16 * 1024, linkQueuePDUs: 64)
    public func setACLLimits(sendTimeout: Duration? = nil, linkQueueBytes: Int? = nil, linkQueuePDUs: Int? = nil) {
        if let sendTimeout { safeguards.sendTimeout = sendTimeout }
        if let linkQueueBytes { safeguards.linkQueueLimit = max(1, linkQueueBytes) }
        if let linkQueuePDUs { safeguards.linkQueuePDULimit = max(1, linkQueuePDUs) }
    }

    public var aclSendTimeout: Duration { safeguards.sendTimeout }
    public var aclLinkQueueLimit: Int { safeguards.linkQueueLimit }
    /// The most PDUs one link's send queue holds (`setACLLimits(linkQueuePDUs:)`).
    public var aclLinkQueuePDULimit: Int { safeguards.linkQueuePDULimit }
    /// Inbound L2CAP PDUs and fragments dropped during reassembly (bad framing, longer than
    /// the channel accepts, partial PDUs discarded); each drop also writes a rate-limited log line.
    public var droppedInboundPDUs: Int { safeguards.inboundDrops }
    /// Inbound PDUs refused because they announce more than their channel accepts.
    public var oversizedInboundPDUs: Int { safeguards.oversizedPDUs }
    /// Inbound PDUs discarded part-way (part of `droppedInboundPDUs`): a start fragment came
    /// before they completed, a continuation overran their L2CAP length, or their link closed.
    ///
    ///     metrics.gauge("l2cap.partial_discards", await host.discardedPartialInboundPDUs)
    public var discardedPartialInboundPDUs: Int { safeguards.partialPDUDiscards }
    /// Outbound PDUs that failed with `LinkError.sendTimeout` or found their link's queue full.
    public var failedOutboundPDUs: (timedOut: Int, queueFull: Int) { (safeguards.sendTimeouts, safeguards.queueOverflows) }
    /// LE credit-based channels ended with `LinkError.sendTimeout` because K-frames waited in
    /// the link's queue past `aclSendTimeout` and were dropped.
    public var timedOutCreditBasedChannels: Int { safeguards.timedOutChannels }
}

extension HCIHost {
    /// What link `handle` holds now: packets handed to the controller and not yet completed,
    /// and bytes and PDUs waiting in its queue; nil for a link the host does not know.
    ///
    ///     if let status = await host.aclLinkStatus(handle: 0x0040), status.queuedBytes > 0 { ... }
    public func aclLinkStatus(handle: UInt16) -> (inFlight: Int, queuedBytes: Int, queuedPDUs: Int)? {
        links[handle].map { (flow.inFlight[handle] ?? 0, $0.queuedBytes, $0.queuedPDUs) }
    }
}
