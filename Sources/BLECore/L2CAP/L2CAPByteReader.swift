/// A connection-oriented channel's incoming SDUs read as one stream of bytes, SDU bounds set
/// aside, for protocols that frame their own data (Core Spec 5.4 Vol 3, Part A, 3.4: each SDU
/// is still taken whole from the channel, so its credits go back as it is taken). The same
/// over the host's channels and the kernel's.
///
///     for try await byte in channel.bytes { parser.feed(byte) }
public struct L2CAPBytes<Channel: ConnectionOrientedChannel>: AsyncSequence, Sendable {
    public typealias Element = UInt8
    public typealias Failure = L2CAPChannelError
    public let channel: Channel

    public init(_ channel: Channel) {
        self.channel = channel
    }

    public func makeAsyncIterator() -> L2CAPByteReader<Channel> { L2CAPByteReader(channel) }
}

/// Reads a channel's SDUs as a byte stream: byte by byte (`next()`, which only waits when the
/// SDU in hand is used up) or in chunks (`read(upTo:)`, which hands over a whole SDU without
/// copying it when it fits). Bytes of an SDU not read yet stay in the reader.
///
///     var reader = L2CAPByteReader(channel)
///     let header = try await reader.read(upTo: 4)
public struct L2CAPByteReader<Channel: ConnectionOrientedChannel>: AsyncIteratorProtocol {
    public typealias Element = UInt8
    public typealias Failure = L2CAPChannelError
    public let channel: Channel
    /// The SDU being read and the index of its next byte.
    @usableFromInline var sdu: [UInt8] = []
    @usableFromInline var offset = 0

    public init(_ channel: Channel) {
        self.channel = channel
    }

    /// The bytes taken from the channel and not read yet.
    public var buffered: Int { sdu.count - offset }

    /// At least one and at most `maxLength` bytes: what is left of the SDU in hand, else the
    /// next SDU's (empty SDUs are skipped). Nil once the channel was closed and every byte
    /// read; `timeout` bounds the wait for the next SDU (`.receiveTimeout`), nil waits.
    ///
    ///     while let chunk = try await reader.read(upTo: 65536, timeout: .seconds(5)) { use(chunk) }
    public mutating func read(upTo maxLength: Int, timeout: Duration? = nil,
                              isolation actor: isolated (any Actor)? = #isolation) async throws(L2CAPChannelError) -> [UInt8]? {
        guard maxLength > 0 else { return [] }
        while offset == sdu.count {
            guard let next = try await channel.receive(timeout: timeout) else { return nil }
            sdu = next
            offset = 0
        }
        if offset == 0, sdu.count <= maxLength {
            defer { sdu = []; offset = 0 }
            return sdu
        }
        let end = offset + min(maxLength, sdu.count - offset)
        defer { offset = end }
        return Array(sdu[offset..<end])
    }

    /// The next byte, or nil once the channel was closed and every byte read.
    @inlinable
    public mutating func next() async throws(L2CAPChannelError) -> UInt8? {
        if offset < sdu.count {
            defer { offset += 1 }
            return sdu[offset]
        }
        return try await refillAndNext(isolation: nil)
    }

    @inlinable
    public mutating func next(isolation actor: isolated (any Actor)?) async throws(L2CAPChannelError) -> UInt8? {
        if offset < sdu.count {
            defer { offset += 1 }
            return sdu[offset]
        }
        return try await refillAndNext(isolation: actor)
    }

    /// Takes the next non-empty SDU and returns its first byte (on the caller's actor).
    @usableFromInline
    mutating func refillAndNext(isolation actor: isolated (any Actor)?) async throws(L2CAPChannelError) -> UInt8? {
        repeat {
            guard let next = try await channel.receive(timeout: nil) else {
                sdu = []
                offset = 0
                return nil
            }
            sdu = next
            offset = 0
        } while sdu.isEmpty
        offset = 1
        return sdu[0]
    }
}
