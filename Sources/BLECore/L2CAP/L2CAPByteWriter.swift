/// Writes a byte stream to a connection-oriented channel (the host's or the kernel's), cut into SDUs of at most the peer's MTU
/// (Core Spec 5.4 Vol 3, Part A, 3.4): for protocols that do not care where SDUs end. Each
/// `write` goes out at once (nothing is held back for a later one); write from one task at a
/// time, or the SDUs of two writes interleave.
///
///     try await channel.byteWriter.write(Array(firmware))
public struct L2CAPByteWriter<Channel: ConnectionOrientedChannel>: Sendable {
    public let channel: Channel
    /// The largest SDU to send; nil: the peer's MTU (read at each write, since a
    /// reconfiguration can raise it). A smaller size lowers the delay of a long write.
    public let maximumSDUSize: Int?

    public init(_ channel: Channel, maximumSDUSize: Int? = nil) {
        self.channel = channel
        self.maximumSDUSize = maximumSDUSize
    }

    /// Sends `bytes` in order as SDUs of at most the peer's MTU (or `maximumSDUSize`);
    /// returns once all are queued on the link. `timeout` bounds each wait for credits
    /// (`.creditTimeout`); when it throws, the SDUs before the failing one were sent.
    ///
    ///     try await writer.write(bytes, timeout: .seconds(10))
    public func write(_ bytes: [UInt8], timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) {
        let peerMTU = await channel.peerMTU
        let size = max(1, min(peerMTU, maximumSDUSize ?? peerMTU))
        if bytes.count <= size {
            if !bytes.isEmpty { try await channel.send(bytes, timeout: timeout) }
            return
        }
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + size, bytes.count)
            try await channel.send(Array(bytes[offset..<end]), timeout: timeout)
            offset = end
        }
    }
}
