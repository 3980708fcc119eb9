#if canImport(Glibc)
import Glibc
#endif
import CHCI
import BLEWire

/// LE credit-based channels made by the kernel (Core Spec Vol 3, Part A, 10.1): the socket is
/// connected to the peer's LE_PSM, the kernel segments SDUs into K-frames and handles credits
/// (a receive side that is not read stops granting them). Like `CreditBasedChannel` it is a
/// `ConnectionOrientedChannel`, so an app can use the stack's own channels or the kernel's.
extension L2CAPSocketChannel {
    /// Opens an LE credit-based channel to `psm` on `peer` through the adapter with address
    /// `adapter` (nil: the kernel picks one). `mtu` is this side's (BT_RCVMTU); with
    /// `security` the kernel pairs or encrypts first (BT_SECURITY).
    ///
    ///     let channel = try await L2CAPSocketChannel.connect(peer: peer, psm: 0x0080, executor: executor)
    ///     try await channel.send(Array("hello".utf8), timeout: .seconds(5))
    ///     let echo = try await channel.receive(timeout: .seconds(5))
    public static func connect(
        adapter: BluetoothAddress? = nil,
        peer: LEAddress,
        psm: UInt16,
        mtu: Int = 2048,
        security: SecurityLevel? = nil,
        executor: AdapterExecutor,
        timeout: Duration = .seconds(20)
    ) async throws(L2CAPSocketError) -> L2CAPSocketChannel {
        let channel = try await open(adapter: adapter, peer: peer, psm: psm, mtu: mtu, security: security, executor: executor, timeout: timeout)
        let inbox = SocketChannelInbox(channel: channel)
        await inbox.attach()
        return channel
    }

    /// The same through adapter hciN.
    ///
    ///     let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: peer, psm: 0x0080, executor: executor)
    public static func connect(
        adapterIndex: Int,
        peer: LEAddress,
        psm: UInt16,
        mtu: Int = 2048,
        security: SecurityLevel? = nil,
        executor: AdapterExecutor,
        timeout: Duration = .seconds(20)
    ) async throws(L2CAPSocketError) -> L2CAPSocketChannel {
        try await connect(adapter: adapterAddress(index: adapterIndex, peer: "\(peer)"), peer: peer, psm: psm, mtu: mtu,
                          security: security, executor: executor, timeout: timeout)
    }

    /// Sends one SDU: returns once the kernel has taken it (its socket buffer holds it until
    /// the peer grants credits). Throws `.creditTimeout` when the kernel takes nothing for
    /// `timeout`, `.cancelled` when the task is cancelled (the SDU may still go), `.sduTooLarge`
    /// over the peer's MTU.
    ///
    ///     try await channel.send(bytes, timeout: .seconds(10))
    public func send(_ sdu: [UInt8], timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) {
        guard let inbox else { throw .receiveInProgress(cid: localCID) }
        guard sdu.count <= peerMTU else { throw .sduTooLarge(size: sdu.count, peerMTU: peerMTU) }
        try await inbox.send(sdu, timeout: timeout).get()
    }

    /// The next SDU, or nil once the channel was closed (by either side) and everything that
    /// arrived before was taken. `timeout` nil waits until data or close.
    ///
    ///     while let sdu = try await channel.receive(timeout: .seconds(2)) { use(sdu) }
    public func receive(timeout: Duration? = nil) async throws(L2CAPChannelError) -> [UInt8]? {
        guard let inbox else { throw .receiveInProgress(cid: localCID) }
        return try await inbox.receive(timeout: timeout).get()
    }

    /// The SDUs as they arrive; ends when either side closes the channel.
    ///
    ///     for try await sdu in channel.sdus { try await channel.send(sdu) }
    public var sdus: SDUs { SDUs(channel: self) }

    public struct SDUs: AsyncSequence, Sendable {
        public typealias Element = [UInt8]
        let channel: L2CAPSocketChannel

        public struct AsyncIterator: AsyncIteratorProtocol {
            let channel: L2CAPSocketChannel
            public mutating func next() async throws(L2CAPChannelError) -> [UInt8]? { try await channel.receive() }
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(L2CAPChannelError) -> [UInt8]? {
                try await channel.receive()
            }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(channel: channel) }
    }

    /// On the queue: pause or resume reading the socket (back-pressure to the kernel).
    func setReading(_ on: Bool) {
        if on { io?.resumeReading() } else { io?.pauseReading() }
    }

    /// On the queue: queues `sdu`; true when the kernel took all of it at once.
    func write(_ sdu: [UInt8]) -> Result<Bool, L2CAPChannelError> {
        guard let io else { return .failure(.closed(peer: peerDescription, cid: localCID)) }
        if let err = io.write(sdu) {
            if err == EMSGSIZE { return .failure(.sduTooLarge(size: sdu.count, peerMTU: peerMTU)) }
            let error = linkError(err)
            fail(error)
            return .failure(.link(error))
        }
        return .success(io.pendingBytes == 0)
    }
}

/// The SDUs a kernel credit-based channel received and the app has not taken, and the tasks
/// waiting to receive or for the kernel to take what they sent. At most `limit` SDUs wait:
/// then the socket is not read, so the kernel stops granting the peer credits.
actor SocketChannelInbox: AdapterIsolated {
    nonisolated let executor: AdapterExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    let channel: L2CAPSocketChannel
    private var queue: [[UInt8]] = []
    private var head = 0
    private var paused = false
    private var end: L2CAPChannelError?
    private let receivers: Waiters<[UInt8]?, L2CAPChannelError>
    private let drains: Waiters<Void, L2CAPChannelError>
    static let limit = 32

    init(channel: L2CAPSocketChannel) {
        self.channel = channel
        executor = channel.executor
        let scheduler = DispatchTimerScheduler(queue: channel.executor.queue)
        receivers = Waiters(executor: channel.executor, scheduler: scheduler)
        drains = Waiters(executor: channel.executor, scheduler: scheduler)
    }

    /// Becomes the channel's receiver.
    func attach() {
        _ = channel.inboxReference.storeIfNil(self)
        channel.io?.onDrained = { [weak self] in self?.assumeIsolated { $0.drains.resumeAll(with: .success(())) } }
        channel.setHandlers(
            receive: { [weak self] sdu in
                guard let self else { return }
                runIsolated(sdu) { inbox, sdu in inbox.push(sdu) }
            },
            close: { [weak self] error in self?.assumeIsolated { $0.ended(error) } })
    }

    private var peerName: String { channel.peerDescription }

    func push(_ sdu: [UInt8]) {
        if receivers.resumeFirst(with: .success(sdu)) { return }
        queue.append(sdu)
        if queue.count - head >= Self.limit, !paused {
            paused = true
            channel.setReading(false)
        }
    }

    func ended(_ error: LinkError) {
        let cid = channel.localCID
        switch error {
        case .closed: end = .closed(peer: peerName, cid: cid)
        case _ where channel.peerEnded: end = .closedByPeer(peer: peerName, cid: cid)
        default: end = .link(error)
        }
        let result: Result<[UInt8]?, L2CAPChannelError>
        switch end {
        case .closed?, .closedByPeer?: result = .success(nil)
        default: result = .failure(end ?? .closed(peer: peerName, cid: cid))
        }
        receivers.resumeAll(with: result)
        drains.failAll(end ?? .closed(peer: peerName, cid: cid))
    }

    func receive(timeout: Duration?) async -> Result<[UInt8]?, L2CAPChannelError> {
        if head < queue.count {
            let sdu = queue[head]
            queue[head] = []
            head += 1
            if head == queue.count { queue.removeAll(keepingCapacity: true); head = 0 }
            if paused, queue.count - head <= Self.limit / 2 {
                paused = false
                channel.setReading(true)
            }
            return .success(sdu)
        }
        if let end {
            switch end {
            case .closed, .closedByPeer: return .success(nil)
            default: return .failure(end)
            }
        }
        guard receivers.isEmpty else { return .failure(.receiveInProgress(cid: channel.localCID)) }
        let cid = channel.localCID, peer = peerName
        return await receivers.wait(
            deadline: timeout.map { ($0, .failure(.receiveTimeout(peer: peer, cid: cid, after: $0))) },
            cancelled: { _ in .failure(.cancelled(peer: peer, cid: cid)) })
    }

    func send(_ sdu: [UInt8], timeout: Duration) async -> Result<Void, L2CAPChannelError> {
        if let end { return .failure(end) }
        switch channel.write(sdu) {
        case .failure(let error): return .failure(error)
        case .success(true): return .success(())
        case .success(false):
            let cid = channel.localCID, peer = peerName
            return await drains.wait(
                deadline: (timeout, .failure(.creditTimeout(peer: peer, cid: cid, after: timeout))),
                cancelled: { _ in .failure(.cancelled(peer: peer, cid: cid)) })
        }
    }
}
