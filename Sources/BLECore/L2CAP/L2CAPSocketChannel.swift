#if canImport(Glibc)
import Glibc
#endif
import CHCI
import Dispatch
import Synchronization
import BLETransport
import BLEWire

/// Why a kernel L2CAP socket could not be connected. Every message names the errno and says
/// what to do.
public enum L2CAPSocketError: Error, Sendable, Equatable, CustomStringConvertible {
    /// socket(AF_BLUETOOTH) failed with EAFNOSUPPORT.
    case bluetoothUnsupported
    /// No powered adapter can reach the peer (EHOSTUNREACH, ENETDOWN, EADDRNOTAVAIL).
    case noAdapter(peer: String, errno: Int32)
    /// The adapter index given does not exist.
    case noSuchAdapter(index: Int, available: [Int])
    /// The connection was not up within `milliseconds`; the attempt was cancelled.
    case timeout(peer: String, milliseconds: Int)
    /// The task waiting for the connection was cancelled; the attempt was cancelled too.
    case cancelled(peer: String)
    /// The kernel or the peer refused or ended the attempt (ECONNREFUSED, ECONNRESET...).
    case refused(peer: String, errno: Int32)
    /// EPERM/EACCES.
    case permissionDenied(errno: Int32)
    /// Another system call failed.
    case system(operation: String, peer: String, errno: Int32)
    /// The peer or the kernel refused the channel to `psm` (ECONNREFUSED, EACCES...): the peer
    /// serves no such PSM, or the security level asked for (or the peer's) was not reached.
    case channelRefused(peer: String, psm: UInt16, security: SecurityLevel?, errno: Int32)
    /// The link did not reach the security level asked for within the connect timeout: the
    /// kernel did not pair (it has no LE SMP channel unless LE was enabled through its
    /// management interface before the adapter was powered on, as bluetoothd does), or its
    /// pairing did not end in time (nobody answered its question); a pairing seen failing is
    /// `.securityFailed`. The socket was closed.
    case securityNotReached(peer: String, requested: SecurityLevel, reached: SecurityLevel?)
    /// Another socket (this program's or another's) listens on `psm` already (EADDRINUSE).
    case psmInUse(psm: UInt16, errno: Int32)
    /// The listener for `psm` was closed (`close()`, or the listener was released): a waiting
    /// or later `accept` ends with this.
    case listenerClosed(psm: UInt16)
    /// No peer opened a channel to `psm` within `after`.
    case acceptTimeout(psm: UInt16, after: Duration)
    /// The task waiting in `accept` for a channel to `psm` was cancelled; the listener goes on.
    case acceptCancelled(psm: UInt16)
    /// The kernel's pairing or encryption for `requested` failed and the socket was closed.
    /// `failure` says how, from the adapter's HCI traffic (nil when the process may not read
    /// the HCI monitor, CAP_NET_RAW); `errno` is what the socket reported (nil when the kernel
    /// kept the link and the wait ended at the timeout).
    case securityFailed(peer: String, requested: SecurityLevel, failure: KernelSecurityFailure?, errno: Int32?)

    public var description: String {
        switch self {
        case .bluetoothUnsupported:
            return "this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); load it with 'modprobe bluetooth'"
        case .noAdapter(let peer, let err):
            return "no powered adapter can reach \(peer) (\(errnoName(err))): power one on with 'sudo hciconfig hci0 up' or HCIAdapters.bringUp(index: 0); kernel L2CAP sockets need the kernel to own a powered adapter"
        case .noSuchAdapter(let index, let available):
            let list = available.isEmpty ? "the kernel knows no adapter" : "adapters present: " + available.map { "hci\($0)" }.joined(separator: ", ")
            return "no adapter hci\(index); \(list)"
        case .timeout(let peer, let ms):
            return "no connection to \(peer) within \(ms) ms; the attempt was cancelled. Is the peer advertising connectable and in range?"
        case .cancelled(let peer):
            return "the connection attempt to \(peer) was cancelled"
        case .refused(let peer, let err):
            return "the connection to \(peer) failed: \(errnoName(err))"
        case .permissionDenied(let err):
            return "permission denied opening an L2CAP socket (\(errnoName(err))): run as root or grant 'sudo setcap cap_net_admin,cap_net_raw+eip' to the program"
        case .system(let op, let peer, let err):
            return "\(op) failed for \(peer): \(errnoName(err))"
        case .securityNotReached(let peer, let requested, let reached):
            let why = requested > .encrypted
                ? "'\(requested)' needs MITM protection, which Just Works pairing cannot give: the kernel pairs as no input, no output unless an agent says otherwise (KernelPairingAgent(index:ioCapability:answer:) with .keyboardDisplay, or bluetoothd's agent), and the peer must be able to show or enter a passkey or compare a number; or ask for 'encrypted'"
                : "the kernel did not pair: without bluetoothd it has no LE SMP channel (enable LE through its management interface while the adapter is down: HCIAdapters.enableLowEnergy(index:) or 'btmgmt le on', then power it up) and no one confirms its Just Works pairing (keep a KernelPairingAgent open)"
            return "the link to \(peer) stayed at security level '\(reached.map { "\($0)" } ?? "unknown")' while BT_SECURITY asked for '\(requested)': \(why)"
        case .psmInUse(let psm, let err):
            return "PSM \(psm.hex) is taken (\(errnoName(err))): another socket listens on it already; close that listener or choose another LE_PSM (0x0080 to 0x00FF)"
        case .listenerClosed(let psm):
            return "the listener for PSM \(psm.hex) was closed; accept no longer waits on it (listen again to accept more channels)"
        case .acceptTimeout(let psm, let after):
            return "no peer opened a channel to PSM \(psm.hex) within \(after); the listener goes on (wait again, or check that the peer knows this PSM and is connected)"
        case .acceptCancelled(let psm):
            return "waiting for a channel to PSM \(psm.hex) was cancelled; the listener goes on"
        case .securityFailed(let peer, let requested, let failure, let err):
            let socket = err.map { " (the socket: \(errnoName($0)))" } ?? ""
            switch failure {
            case .pairingFailed(let reason, let byPeer)?:
                return "\(reason) pairing with \(peer) for '\(requested)': \(byPeer ? "the peer" : "the kernel") ended the pairing\(reason.advice.map { "; \($0)" } ?? "")\(socket)"
            case .encryptionFailed(let status)? where status == .pinOrKeyMissing:
                return "\(peer) no longer has the bond: encryption with the kernel's stored key for '\(requested)' failed with \(status)\(socket); remove the kernel's key (HCIAdapters.removeBond(index:peer:) or 'btmgmt unpair') and connect again to pair"
            case .encryptionFailed(let status)?:
                return "encryption with the kernel's stored key for \(peer) ('\(requested)') failed with \(status)\(socket)"
            case nil:
                return "the kernel could not secure the link to \(peer) for '\(requested)'\(socket): a wrong passkey, a refused confirmation or a peer that no longer has the bond; the HCI traffic says which (btmon, or give the program CAP_NET_RAW and this error names the SMP reason)"
            }
        case .channelRefused(let peer, let psm, let security, let err):
            let level = security.map { " or could not reach the security level asked for (\($0))" } ?? " or needs a security level (pass security:)"
            return "\(peer) refused the L2CAP channel to PSM \(psm.hex) (\(errnoName(err))): the peer may not serve this PSM\(level)"
        }
    }
}

/// An L2CAP channel made by the kernel: a SOCK_SEQPACKET BTPROTO_L2CAP socket connected to a
/// peer's ATT fixed channel (CID 0x0004, Core Spec Vol 3, Part A, 2.1), or to an LE_PSM as an
/// LE credit-based channel (see `connect(adapter:peer:psm:mtu:security:executor:timeout:)`).
/// The kernel owns the adapter (it must be up), creates the LE link, pairs when a security
/// level is asked for (BT_SECURITY); each read is one SDU. `ATTBearer` runs over it exactly
/// as over the host's own `FixedChannel`.
///
///     let channel = try await L2CAPSocketChannel.connect(peer: LEAddress("F0:00:00:00:48:52", type: .random)!, executor: executor)
///     let bearer = ATTBearer(channel: channel, scheduler: DispatchTimerScheduler(queue: executor.queue))
///
/// The socket's I/O state is confined to the executor's queue; `send`, `enqueue` and `close`
/// hop there from elsewhere.
public final class L2CAPSocketChannel: L2CAPChannel {
    public nonisolated let executor: AdapterExecutor
    /// The peer the socket is connected to.
    public let peer: LEAddress
    /// The LE_PSM of a credit-based channel; nil for the ATT fixed channel.
    public let psm: UInt16?
    /// This side's CID (0x0004 for ATT, a dynamic CID for a PSM).
    public let localCID: UInt16
    /// The largest SDU this side receives (BT_RCVMTU) and the peer does (BT_SNDMTU), as the
    /// kernel negotiated them.
    public let mtu: Int
    public let peerMTU: Int
    /// The link's security level when the channel came up (BT_SECURITY), nil if unknown.
    public let securityLevel: SecurityLevel?
    let fd: Int32
    /// The SDU queue behind `receive(timeout:)` and `send(_:timeout:)` (credit-based
    /// channels), set once when the channel is made, before anyone else has it.
    let inboxReference = AtomicLazyReference<SocketChannelInbox>()
    /// The socket's I/O, the handlers and the end, on the executor's queue.
    private let state: QueueConfined<State>

    private struct State {
        var io: DispatchFD?
        /// The kernel reported the end of the channel without an error (the peer disconnected it).
        var peerEnded = false
        var receive: (@Sendable ([UInt8]) -> Void)?
        var closeHandler: (@Sendable (LinkError) -> Void)?
        /// Inbound SDUs that arrived before handlers were installed (bounded).
        var early: [[UInt8]] = []
        var closedError: LinkError?
        let readBuffer = ReadBuffer(byteCount: L2CAPSocketChannel.readBufferSize)
    }

    /// The SDU queue of a credit-based channel (nil for the ATT fixed channel).
    var inbox: SocketChannelInbox? { inboxReference.load() }
    /// The socket's reader and writer once reading started (on the executor's queue).
    var io: DispatchFD? { state.value.io }
    /// The kernel reported the end of the channel without an error (on the executor's queue).
    var peerEnded: Bool { state.value.peerEnded }

    /// The L2CAP SDU length field is 16 bits (Vol 3, Part A, 3.3.1): no SDU is longer.
    static let readBufferSize = 65_535

    /// The ATT fixed channel (Vol 3, Part A, 2.1).
    static let attChannelID: UInt16 = 0x0004

    /// A channel over `fd`, a connected socket (tests and benchmarks pass one end of a socket
    /// pair); reading starts with `startReading()` on the executor's queue.
    package init(fd: Int32, peer: LEAddress, psm: UInt16?, executor: AdapterExecutor) {
        self.fd = fd
        self.peer = peer
        self.psm = psm
        let cid = chci_l2cap_local_cid(fd)
        localCID = cid > 0 ? UInt16(cid) : (psm == nil ? Self.attChannelID : 0)
        mtu = Int(max(0, chci_get_bt_mtu(fd, BT_RCVMTU)))
        peerMTU = Int(max(0, chci_get_bt_mtu(fd, BT_SNDMTU)))
        securityLevel = Self.level(kernel: chci_get_bt_security(fd))
        self.executor = executor
        state = QueueConfined(State(), on: executor.queue)
    }

    deinit {
        // The last reference may go on any thread: the sources are cancelled on their queue.
        let state = self.state
        executor.queue.async { state.value.io?.cancel() }
    }

    public var peerDescription: String { "\(peer.address)" }

    /// Connects the ATT channel to `peer` through the adapter with address `adapter` (nil: the
    /// kernel picks a powered LE adapter). Throws on failure or after `timeout`, cancelling the
    /// kernel's attempt (closing the socket does). With `security`, the kernel raises the
    /// link to that level (pairing Just Works with its default IO capability) before the
    /// channel is up.
    ///
    ///     let channel = try await L2CAPSocketChannel.connect(peer: hrm, executor: executor, timeout: .seconds(20))
    public static func connect(
        adapter: BluetoothAddress? = nil,
        peer: LEAddress,
        security: SecurityLevel? = nil,
        executor: AdapterExecutor,
        timeout: Duration = .seconds(20)
    ) async throws(L2CAPSocketError) -> L2CAPSocketChannel {
        try await open(adapter: adapter, peer: peer, psm: nil, mtu: nil, security: security, executor: executor, timeout: timeout)
    }

    /// Opens the socket, sets its options, connects (ATT fixed channel when `psm` is nil).
    static func open(
        adapter: BluetoothAddress?, peer: LEAddress, psm: UInt16?, mtu: Int?, security: SecurityLevel?,
        executor: AdapterExecutor, timeout: Duration
    ) async throws(L2CAPSocketError) -> L2CAPSocketChannel {
        let name = "\(peer)"
        let start = ContinuousClock.now
        let fd = try openBound(adapter: adapter, fixedChannel: psm == nil, peerName: name)
        // Opened before connect(): a stored key is used as soon as the link is up.
        let watch = (security ?? .none) > .none ? KernelSecurityWatch(peer: peer, adapter: adapter) : nil
        defer { watch?.close() }
        do throws(L2CAPSocketError) {
            if let security { try setSecurity(fd, security, peerName: name) }
            if let mtu { try setReceiveMTU(fd, mtu, peerName: name) }
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        func failure(_ err: Int32) -> L2CAPSocketError {
            if let security, let seen = watch?.failure {
                return .securityFailed(peer: name, requested: security, failure: seen, errno: err)
            }
            if let psm, err == ECONNREFUSED || (security != nil && (err == EACCES || err == EPERM)) {
                return .channelRefused(peer: name, psm: psm, security: security, errno: err)
            }
            // bt_to_errno(Authentication Failure, 0x05): the kernel ended the link over security.
            if let security, security > .none, err == EACCES {
                return .securityFailed(peer: name, requested: security, failure: nil, errno: err)
            }
            return connectError(err, peerName: name)
        }
        var remote = sockaddr_l2()
        chci_fill_sockaddr_l2(&remote, peer.address.littleEndianBytes, addressType(peer.type), psm ?? 0, psm == nil ? attChannelID : 0)
        if chci_connect_l2(fd, &remote) < 0 {
            let err = errno
            guard err == EINPROGRESS else {
                _ = Glibc.close(fd)
                throw failure(err)
            }
            // Not `Waiters`: this waits in a static function before any actor on the executor
            // exists, and the outcome also decides when the socket is closed (`ConnectWait`).
            try await ConnectWait(fd: fd, queue: executor.queue, peerName: name, failure: failure).run(timeout: timeout)
        }
        if let security, security > .none {
            let handle = chci_l2cap_handle(fd)
            if handle >= 0 { watch?.adopt(handle: UInt16(handle)) }
            try await raiseSecurity(fd, to: security, peerName: name, executor: executor, within: timeout - (ContinuousClock.now - start),
                                    failure: failure, watch: watch)
        }
        let channel = L2CAPSocketChannel(fd: fd, peer: peer, psm: psm, executor: executor)
        if let security, security > .none, (channel.securityLevel ?? .none) < security {
            _ = Glibc.close(fd)
            throw .securityNotReached(peer: name, requested: security, reached: channel.securityLevel)
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            executor.queue.async {
                channel.startReading()
                c.resume()
            }
        }
        return channel
    }

    /// Connects through adapter hciN (its address from the kernel's list).
    ///
    ///     let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: hrm, executor: executor)
    public static func connect(
        adapterIndex: Int,
        peer: LEAddress,
        security: SecurityLevel? = nil,
        executor: AdapterExecutor,
        timeout: Duration = .seconds(20)
    ) async throws(L2CAPSocketError) -> L2CAPSocketChannel {
        try await connect(adapter: adapterAddress(index: adapterIndex, peer: "\(peer)"), peer: peer, security: security, executor: executor, timeout: timeout)
    }

    /// The address of adapter hciN, from the kernel's list; `peer` names the socket in errors.
    static func adapterAddress(index adapterIndex: Int, peer: String) throws(L2CAPSocketError) -> BluetoothAddress {
        let adapters: [AdapterInfo]
        do {
            adapters = try HCIAdapters.list()
        } catch {
            if case .bluetoothUnsupported = error { throw .bluetoothUnsupported }
            throw .system(operation: "listing adapters (\(error))", peer: peer, errno: 0)
        }
        guard let adapter = adapters.first(where: { $0.index == adapterIndex }) else {
            throw .noSuchAdapter(index: adapterIndex, available: adapters.map(\.index))
        }
        return adapter.address
    }

    /// BT_SECURITY_LOW (1) to BT_SECURITY_FIPS (4) have the numbers of LE security mode 1's
    /// levels (`SecurityLevel`); BT_SECURITY_SDP (0) is no security as well.
    static func level(kernel: Int32) -> SecurityLevel? {
        kernel == 0 ? SecurityLevel.none : SecurityLevel(rawValue: Int(kernel))
    }

    static func setSecurity(_ fd: Int32, _ level: SecurityLevel, peerName: String) throws(L2CAPSocketError) {
        guard chci_set_bt_security(fd, UInt8(level.rawValue)) == 0 else {
            throw .system(operation: "setsockopt(BT_SECURITY, level \(level.rawValue))", peer: peerName, errno: errno)
        }
    }

    static func setReceiveMTU(_ fd: Int32, _ mtu: Int, peerName: String) throws(L2CAPSocketError) {
        // LE credit-based channels: MTU 23 to 65535 (Vol 3, Part A, 4.22).
        guard (23...65_535).contains(mtu), chci_set_bt_mtu(fd, BT_RCVMTU, UInt16(mtu)) == 0 else {
            throw .system(operation: "setsockopt(BT_RCVMTU, \(mtu)) (23 to 65535)", peer: peerName, errno: (23...65_535).contains(mtu) ? errno : EINVAL)
        }
    }

    /// BDADDR_LE_PUBLIC or BDADDR_LE_RANDOM, as sockaddr_l2 wants the peer's address type.
    static func addressType(_ type: LEAddressType) -> UInt8 {
        type.isRandom ? UInt8(BDADDR_LE_RANDOM) : UInt8(BDADDR_LE_PUBLIC)
    }

    /// A non-blocking L2CAP socket bound to the local ATT channel (or, to connect to a PSM, to
    /// no channel; to listen, to `psm`), with the adapter's LE address type `ownType`.
    static func openBound(adapter: BluetoothAddress?, ownType: LEAddressType = .public, psm: UInt16 = 0, fixedChannel: Bool,
                          peerName: String) throws(L2CAPSocketError) -> Int32 {
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(AF_BLUETOOTH, type, BTPROTO_L2CAP)
        if fd < 0 {
            let err = errno
            if err == EAFNOSUPPORT { throw .bluetoothUnsupported }
            if err == EPERM || err == EACCES { throw .permissionDenied(errno: err) }
            throw .system(operation: "socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)", peer: peerName, errno: err)
        }
        // Binding the ATT CID keeps the channel a fixed channel; without it the kernel would
        // open an LE credit-based channel.
        var local = sockaddr_l2()
        chci_fill_sockaddr_l2(&local, (adapter ?? .zero).littleEndianBytes, addressType(ownType), psm, fixedChannel ? attChannelID : 0)
        if chci_bind_l2(fd, &local) < 0 {
            let err = errno
            _ = Glibc.close(fd)
            if err == EADDRNOTAVAIL { throw .noAdapter(peer: peerName, errno: err) }
            if err == EADDRINUSE, psm != 0 { throw .psmInUse(psm: psm, errno: err) }
            let what = psm != 0 ? "PSM \(psm.hex)" : fixedChannel ? "ATT channel" : "no channel"
            throw .system(operation: "bind(L2CAP, \(what), adapter \(adapter.map { "\($0)" } ?? "any"))", peer: peerName, errno: err)
        }
        return fd
    }

    static func connectError(_ err: Int32, peerName: String) -> L2CAPSocketError {
        switch err {
        case EHOSTUNREACH, ENETDOWN, EADDRNOTAVAIL, ENODEV:
            return .noAdapter(peer: peerName, errno: err)
        case EPERM, EACCES:
            return .permissionDenied(errno: err)
        case ETIMEDOUT:
            return .timeout(peer: peerName, milliseconds: 0)
        case ECONNREFUSED, ECONNRESET, ECONNABORTED, EHOSTDOWN:
            return .refused(peer: peerName, errno: err)
        default:
            return .system(operation: "connect(L2CAP, ATT channel)", peer: peerName, errno: err)
        }
    }

    // MARK: - L2CAPChannel

    /// Hands the SDU to the kernel (queued while the socket is full, never dropped). The
    /// socket and its sources are touched only on the executor's queue: a nonisolated async
    /// call runs elsewhere, so it hops there first.
    public func send(_ sdu: [UInt8]) async throws(LinkError) {
        let error: LinkError?
        if executor.isOnQueue {
            error = writeOnQueue(sdu)
        } else {
            error = await withCheckedContinuation { (c: CheckedContinuation<LinkError?, Never>) in
                executor.queue.async { c.resume(returning: self.writeOnQueue(sdu)) }
            }
        }
        if let error { throw error }
    }

    /// Queues the SDU in order with everything sent before it on this executor.
    public func enqueue(_ sdu: [UInt8]) {
        if executor.isOnQueue { _ = writeOnQueue(sdu) } else { executor.queue.async { _ = self.writeOnQueue(sdu) } }
    }

    /// On the queue: the write, or why the channel cannot take it (ending the channel when
    /// the socket failed).
    private func writeOnQueue(_ sdu: [UInt8]) -> LinkError? {
        if let closedError = state.value.closedError { return closedError }
        guard let io = state.value.io else { return .closed(peer: peer.address, handle: nil) }
        guard let err = io.write(sdu) else { return nil }
        if err == EMSGSIZE { return .tooLarge(size: sdu.count, maximum: outgoingMTU() ?? 0) }
        let error = linkError(err)
        fail(error)
        return error
    }

    public func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        let pending = state.value.early
        state.value.receive = receive
        state.value.closeHandler = close
        state.value.early.removeAll()
        for sdu in pending { receive(sdu) }
        if let closedError = state.value.closedError { close(closedError) }
    }

    /// Closes the socket (the kernel then ends the link if nothing else uses it). The close
    /// handler gets `.closed`. Safe from any thread.
    public func close() {
        if executor.isOnQueue { closeOnQueue() } else { executor.queue.async { self.closeOnQueue() } }
    }

    private func closeOnQueue() { fail(.closed(peer: peer.address, handle: nil)) }

    // MARK: - I/O on the executor's queue

    package func startReading() {
        let io = DispatchFD(fd: fd, queue: executor.queue, packetMode: true, isSocket: true)
        state.value.io = io
        do {
            try io.start(
                onReadable: { [weak self] in self?.readAvailable() },
                onWriteError: { [weak self] err in
                    guard let self else { return }
                    self.fail(self.linkError(err))
                })
        } catch {
            fail(linkError(error.errno))
        }
    }

    /// Reads every SDU the socket holds. The kernel reports the channel's end before the SDUs
    /// still queued: skb_recv_datagram returns (and clears) the socket's error first, and a
    /// shut-down socket reads 0 while SDUs wait. So a peer's last SDUs sent just before its
    /// Disconnection Request would be lost; after an end this reads on until nothing is left,
    /// then ends with the first reason.
    func readAvailable() {
        let readBuffer = state.value.readBuffer.bytes
        var ending: Int32?  // the end seen first: its errno, 0 for end of stream
        while state.value.closedError == nil {
            let err: Int32
            do {
                guard let n = try FileDescriptorIO.retryingInterrupts("recv", { recv(fd, readBuffer.baseAddress, readBuffer.count, Int32(MSG_DONTWAIT)) }) else {
                    if let ending { end(ending) }
                    return
                }
                if n > 0 {
                    let sdu = [UInt8](UnsafeRawBufferPointer(rebasing: readBuffer[..<n]))
                    if let receive = state.value.receive {
                        receive(sdu)
                    } else if state.value.early.count < 64 {
                        state.value.early.append(sdu)
                    }
                    continue
                }
                err = socketError(fd)
            } catch {
                err = error.errno
            }
            if let ending {
                end(ending)
                return
            }
            ending = err
        }
    }

    /// Ends the channel: `err` 0 is the end of stream (the peer or the kernel closed it).
    private func end(_ err: Int32) {
        state.value.peerEnded = err == 0
        fail(err != 0 ? linkError(err) : .transportLost("the kernel ended the L2CAP channel to \(peerDescription) (end of stream)"))
    }

    /// The kernel turns the HCI disconnect reason into an errno (bt_to_errno); map back the
    /// common ones.
    func linkError(_ err: Int32) -> LinkError {
        switch err {
        case ECONNRESET: return .disconnected(peer: peer.address, reason: .remoteUserTerminatedConnection)
        case ETIMEDOUT: return .disconnected(peer: peer.address, reason: .connectionTimeout)
        case ECONNABORTED: return .disconnected(peer: peer.address, reason: .connectionTerminatedByLocalHost)
        default: return .transportLost("L2CAP socket to \(peerDescription): \(errnoName(err))")
        }
    }

    private func outgoingMTU() -> Int? {
        var options = l2cap_options()
        var length = socklen_t(MemoryLayout<l2cap_options>.size)
        guard getsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &options, &length) == 0 else { return nil }
        return Int(options.omtu)
    }

    func fail(_ error: LinkError) {
        guard state.value.closedError == nil else { return }
        state.value.closedError = error
        let handler = state.value.closeHandler
        state.value.closeHandler = nil
        state.value.receive = nil
        if let io = state.value.io { io.cancel() } else { _ = Glibc.close(fd) }
        handler?(error)
    }
}

/// SO_ERROR of a socket: the pending error, 0 when none (or when it cannot be read).
func socketError(_ fd: Int32) -> Int32 {
    var value: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
    return value
}

/// One non-blocking connect() in progress (or a socket the kernel holds until the link is
/// secure): completes on write readiness (SO_ERROR says how), on the timeout, or on
/// cancellation, exactly once. The fd is closed here on failure.
final class ConnectWait: Sendable {
    let fd: Int32
    let queue: DispatchQueue
    let peerName: String
    private struct State {
        let failure: (Int32) -> L2CAPSocketError
        /// The error for the timeout, made on `queue` before the fd is closed; nil: `.timeout`.
        let timedOut: (() -> L2CAPSocketError)?
        var continuation: CheckedContinuation<Result<Void, L2CAPSocketError>, Never>?
        var source: DispatchSourceWrite?
        var timer: (any ScheduledTimer)?
        var outcome: Result<Void, L2CAPSocketError>?
    }
    /// Touched only on `queue`.
    private let state: QueueConfined<State>

    init(fd: Int32, queue: DispatchQueue, peerName: String, failure: @escaping (Int32) -> L2CAPSocketError,
         timedOut: (() -> L2CAPSocketError)? = nil) {
        self.fd = fd
        self.queue = queue
        self.peerName = peerName
        self.state = QueueConfined(State(failure: failure, timedOut: timedOut), on: queue)
    }

    /// Waits for the outcome, at most `timeout`; cancelling the task ends the wait with
    /// `.cancelled`.
    func run(timeout: Duration) async throws(L2CAPSocketError) {
        let ms = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<Void, L2CAPSocketError>, Never>) in
                queue.async { self.start(c, timeout: timeout, milliseconds: ms) }
            }
        } onCancel: {
            queue.async { self.finish(.failure(.cancelled(peer: self.peerName))) }
        }
        try result.get()
    }

    private func start(_ c: CheckedContinuation<Result<Void, L2CAPSocketError>, Never>, timeout: Duration, milliseconds: Int) {
        if let outcome = state.value.outcome {
            // Cancelled before the wait began.
            c.resume(returning: outcome)
            return
        }
        state.value.continuation = c
        let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in
            let err = socketError(fd)
            finish(err == 0 ? .success(()) : .failure(state.value.failure(err)))
        }
        state.value.source = source
        state.value.timer = DispatchTimerScheduler(queue: queue).schedule(after: timeout) { [self] in
            queue.async { self.finish(.failure(self.state.value.timedOut?() ?? .timeout(peer: self.peerName, milliseconds: milliseconds))) }
        }
        source.resume()
    }

    /// Ends the wait once. With a source, the waiter resumes only from its cancel handler,
    /// when no handler can run any more and libdispatch no longer watches the fd: the caller
    /// may then close the fd (or this closes it on failure) without a new socket reusing its
    /// number under a source still registered for the old one.
    func finish(_ result: Result<Void, L2CAPSocketError>) {
        guard state.value.outcome == nil else { return }
        state.value.outcome = result
        state.value.timer?.cancel()
        let fd = self.fd
        let failed: Bool
        if case .failure = result { failed = true } else { failed = false }
        guard let source = state.value.source else {
            if failed { _ = Glibc.close(fd) }
            resume(result)
            return
        }
        source.setCancelHandler { [self] in
            if failed { _ = Glibc.close(fd) }
            resume(result)
        }
        source.cancel()
    }

    private func resume(_ result: Result<Void, L2CAPSocketError>) {
        let continuation = state.value.continuation
        state.value.continuation = nil
        continuation?.resume(returning: result)
    }
}
