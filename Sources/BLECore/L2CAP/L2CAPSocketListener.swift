#if canImport(Glibc)
import Glibc
#endif
import CHCI
import BLETransport
import BLEWire

extension L2CAPSocketChannel {
    /// Listens on `psm` of the adapter with address `adapter` (nil: every adapter) for the LE
    /// credit-based channels peers open (Core Spec 5.4 Vol 3, Part A, 4.22): the kernel's
    /// counterpart of `Connection.acceptL2CAPChannels(psm:mtu:)`. `ownType` is the adapter's
    /// LE address type, `mtu` this side's for every channel (BT_RCVMTU); with `security` the
    /// kernel refuses a channel on a link below that level (BT_SECURITY; it does not pair for
    /// a listener: the peer must have).
    ///
    ///     for try await channel in try L2CAPSocketChannel.listen(psm: 0x0081, executor: executor) { serve(channel) }
    public static func listen(
        adapter: BluetoothAddress? = nil,
        ownType: LEAddressType = .public,
        psm: UInt16,
        mtu: Int = 2048,
        security: SecurityLevel? = nil,
        executor: AdapterExecutor
    ) throws(L2CAPSocketError) -> L2CAPSocketListener {
        let name = "a listener on PSM \(psm.hex)"
        let fd = try openBound(adapter: adapter, ownType: ownType, psm: psm, fixedChannel: false, peerName: name)
        do throws(L2CAPSocketError) {
            if let security { try setSecurity(fd, security, peerName: name) }
            try setReceiveMTU(fd, mtu, peerName: name)
            guard Glibc.listen(fd, L2CAPSocketListener.backlog) == 0 else {
                throw .system(operation: "listen(L2CAP, PSM \(psm.hex))", peer: name, errno: errno)
            }
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        return L2CAPSocketListener(fd: fd, psm: psm, security: security, executor: executor)
    }

    /// The same on adapter hciN.
    ///
    ///     let listener = try L2CAPSocketChannel.listen(adapterIndex: 0, psm: 0x0081, mtu: 4096, executor: executor)
    public static func listen(
        adapterIndex: Int,
        ownType: LEAddressType = .public,
        psm: UInt16,
        mtu: Int = 2048,
        security: SecurityLevel? = nil,
        executor: AdapterExecutor
    ) throws(L2CAPSocketError) -> L2CAPSocketListener {
        let address = try adapterAddress(index: adapterIndex, peer: "a listener on PSM \(psm.hex)")
        return try listen(adapter: address, ownType: ownType, psm: psm, mtu: mtu, security: security, executor: executor)
    }
}

/// A listening kernel L2CAP socket (SOCK_SEQPACKET, bound to an LE_PSM): the LE credit-based
/// channels peers open to it, as `L2CAPSocketChannel`s (the `ConnectionOrientedChannel` that
/// `CreditBasedChannel` is on the host's own path). An async sequence of channels that ends
/// once the listener is closed; releasing the listener (ending the loop) closes its socket, as
/// ending the loop over `Connection.acceptL2CAPChannels` unregisters the PSM. Channels
/// accepted before stay open.
///
///     let listener = try L2CAPSocketChannel.listen(adapterIndex: 0, psm: 0x0081, executor: executor)
///     let channel = try await listener.accept(timeout: .seconds(30))
///     listener.close()
public actor L2CAPSocketListener: AsyncSequence {
    public typealias Element = L2CAPSocketChannel
    public typealias Failure = L2CAPSocketError

    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// The LE_PSM listened on.
    public nonisolated let psm: UInt16
    /// The level a link must be at for the kernel to accept a channel on it.
    public nonisolated let security: SecurityLevel?
    private let fd: Int32
    /// The socket's read readiness (a channel waits to be accepted), armed while a caller waits.
    private var io: DispatchFD?
    private var fdClosed = false
    /// Why accepting ended: closed, or the socket failed.
    private var end: L2CAPSocketError?
    private let waiters: Waiters<L2CAPSocketChannel, L2CAPSocketError>

    /// Channels the kernel holds for accept() (listen's backlog).
    static let backlog: Int32 = 8

    init(fd: Int32, psm: UInt16, security: SecurityLevel?, executor: AdapterExecutor) {
        self.fd = fd
        self.psm = psm
        self.security = security
        self.executor = executor
        waiters = Waiters(executor: executor, scheduler: DispatchTimerScheduler(queue: executor.queue))
    }

    deinit {
        if let io {
            executor.queue.async { io.cancel() }
        } else if !fdClosed {
            _ = Glibc.close(fd)
        }
    }

    /// The next channel a peer opens, once the kernel has accepted it (its link at `security`).
    /// Throws `.acceptTimeout` after `timeout` (nil: no limit), `.acceptCancelled` when the
    /// task is cancelled (the listener goes on), `.listenerClosed` once it was closed, and
    /// `.system` (accept's errno) when the socket failed, which ends the listener.
    ///
    ///     let channel = try await listener.accept(timeout: .seconds(30))
    public func accept(timeout: Duration? = nil) async throws(L2CAPSocketError) -> L2CAPSocketChannel {
        if let end { throw end }
        let psm = self.psm
        return try await waiters.wait(
            deadline: timeout.map { ($0, .failure(.acceptTimeout(psm: psm, after: $0))) },
            cancelled: { _ in .failure(.acceptCancelled(psm: psm)) },
            added: { _ in self.watch() }
        ).get()
    }

    /// Closes the socket: waiting and later `accept`s throw `.listenerClosed`, the sequence
    /// ends. Channels accepted before stay open. Safe from any thread.
    ///
    ///     listener.close()
    public nonisolated func close() {
        if executor.isOnQueue {
            assumeIsolated { $0.finish(.listenerClosed(psm: $0.psm)) }
        } else {
            executor.queue.async { self.assumeIsolated { $0.finish(.listenerClosed(psm: $0.psm)) } }
        }
    }

    /// Reads the socket while a caller waits; the first wait starts the reader.
    private func watch() {
        if let io {
            io.resumeReading()
            return
        }
        let io = DispatchFD(fd: fd, queue: executor.queue, packetMode: true, isSocket: true)
        self.io = io
        do {
            try io.start(onReadable: { [weak self] in self?.assumeIsolated { $0.acceptWaiting() } }, onWriteError: { _ in })
        } catch {
            finish(.system(operation: error.operation, peer: "PSM \(psm)", errno: error.errno))
        }
    }

    /// Accepts a channel for each caller that waits; stops reading when none does (the kernel
    /// keeps the others, up to the backlog).
    private func acceptWaiting() {
        while end == nil, !waiters.isEmpty {
            var address = [UInt8](repeating: 0, count: 6)
            var type: UInt8 = 0
            let accepted: Int?
            do {
                accepted = try FileDescriptorIO.retryingInterrupts("accept") { Int(chci_accept_l2(fd, &address, &type)) }
            } catch where error.errno == ECONNABORTED {
                continue
            } catch {
                finish(.system(operation: "accept(L2CAP, PSM \(psm.hex))", peer: "a listener on PSM \(psm.hex)", errno: error.errno))
                return
            }
            guard let accepted else { return }
            let child = Int32(accepted)
            let raw = address.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let peer = LEAddress(BluetoothAddress(rawValue: raw), type: Int32(type) == BDADDR_LE_RANDOM ? .random : .public)
            let channel = L2CAPSocketChannel(fd: child, peer: peer, psm: psm, executor: executor)
            // The kernel refuses channels on links below BT_SECURITY; never hand one over plain.
            if let security, security > .none, (channel.securityLevel ?? .none) < security {
                channel.close()
                continue
            }
            channel.startReading()
            SocketChannelInbox(channel: channel).assumeIsolated { $0.attach() }
            waiters.resumeFirst(with: .success(channel))
        }
        if end == nil { io?.pauseReading() }
    }

    private func finish(_ error: L2CAPSocketError) {
        guard end == nil else { return }
        end = error
        if let io { io.cancel() } else { _ = Glibc.close(fd) }
        fdClosed = true
        waiters.failAll(error)
    }

    /// The next channel, or nil once the listener was closed.
    func nextChannel() async throws(L2CAPSocketError) -> L2CAPSocketChannel? {
        do throws(L2CAPSocketError) {
            return try await accept()
        } catch .listenerClosed {
            return nil
        }
    }

    public nonisolated func makeAsyncIterator() -> AsyncIterator { AsyncIterator(listener: self) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let listener: L2CAPSocketListener
        public mutating func next() async throws(L2CAPSocketError) -> L2CAPSocketChannel? { try await listener.nextChannel() }
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(L2CAPSocketError) -> L2CAPSocketChannel? {
            try await listener.nextChannel()
        }
    }
}
