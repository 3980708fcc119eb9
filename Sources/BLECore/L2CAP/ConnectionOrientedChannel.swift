import BLEWire

/// An L2CAP connection-oriented channel to a peer's PSM as an application uses it (Core Spec
/// 5.4 Vol 3, Part A, 3.4 and 10.1): whole SDUs both ways with credit-based flow control.
/// Two transports carry it: the host's own ACL path (`CreditBasedChannel`, from
/// `Connection.openL2CAPChannel`) and the kernel's (`L2CAPSocketChannel`, from
/// `L2CAPSocketChannel.connect(peer:psm:...)`). Code written against this protocol runs on
/// either, so an app can choose our stack or the kernel's.
///
///     func echo(_ channel: some ConnectionOrientedChannel) async throws {
///         for try await sdu in channel.sdus { try await channel.send(sdu, timeout: .seconds(10)) }
///     }
public protocol ConnectionOrientedChannel: AnyObject, Sendable {
    /// The SDUs as they arrive (see `sdus`).
    associatedtype SDUs: AsyncSequence<[UInt8], L2CAPChannelError> & Sendable

    /// The peer the channel goes to.
    var peer: LEAddress { get }
    /// The CID this side receives on.
    var localCID: UInt16 { get }
    /// The largest SDU this side accepts, and the largest the peer does (an enhanced channel's
    /// reconfiguration can raise them, hence async).
    var mtu: Int { get async }
    var peerMTU: Int { get async }

    /// Sends one SDU (at most `peerMTU` bytes); returns once the transport has taken it.
    /// Throws `.creditTimeout` when the peer grants no credits for `timeout`, `.cancelled`
    /// when the task is cancelled, `.sduTooLarge` over the peer's MTU.
    func send(_ sdu: [UInt8], timeout: Duration) async throws(L2CAPChannelError)
    /// The next SDU, or nil once either side closed the channel and every SDU was taken;
    /// `timeout` nil waits until data or close. One reader at a time.
    nonisolated(nonsending) func receive(timeout: Duration?) async throws(L2CAPChannelError) -> [UInt8]?
    /// The SDUs as an async sequence: ends when either side closes the channel, throws when
    /// it ends for another reason (the link lost, a malformed K-frame).
    var sdus: SDUs { get }
    /// Closes the channel; pending sends and receives end.
    func close() async
}

extension ConnectionOrientedChannel {
    /// The bytes of the incoming SDUs, in order, without their bounds. One reader at a time
    /// (like `sdus`); ends when either side closes the channel.
    ///
    ///     var reader = channel.bytes.makeAsyncIterator()
    ///     while let chunk = try await reader.read(upTo: 4096) { file.write(chunk) }
    public var bytes: L2CAPBytes<Self> { L2CAPBytes(self) }

    /// A writer that cuts bytes into SDUs of at most the peer's MTU.
    ///
    ///     try await channel.byteWriter.write(bytes)
    public var byteWriter: L2CAPByteWriter<Self> { L2CAPByteWriter(self) }
}

extension CreditBasedChannel: ConnectionOrientedChannel {
    /// Closes the channel, waiting at most 5 s for the peer's Disconnection Response.
    ///
    ///     await channel.close()
    public func close() async {
        await close(timeout: .seconds(5))
    }
}

extension L2CAPSocketChannel: ConnectionOrientedChannel {}
