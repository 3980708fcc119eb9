import BLECore
import BLEWire
import Synchronization

/// The Security Manager of one link (Vol 3, Part H): the SMP channel 0x0006, its 30-second
/// timer, and the pairing procedures, as the initiator (this side is the central) or as the
/// responder (this side is the peripheral, `Connection.acceptPairing`).
///
/// Normally reached through `Connection.pair(...)`, `Connection.requireSecurity(...)` and
/// `Connection.acceptPairing(...)`.
///
///     let bond = try await link.securityManager().pair(options: options, agent: agent)
public actor SecurityManager {
    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let peer: LEAddress
    /// This side's address on the link (the initiator's in f5, f6 and c1).
    public nonisolated let local: LEAddress
    /// The Connection_Handle of the link this manager belongs to.
    public nonisolated let handle: UInt16
    /// This side's role on the link: the central initiates pairing, the peripheral responds.
    public nonisolated let role: LinkRole
    nonisolated let channel: any L2CAPChannel
    nonisolated let scheduler: any TimerScheduler
    nonisolated weak let connection: Connection?

    /// Received PDUs no procedure has taken yet (bounded).
    var inbox: [SMPPDU] = []
    /// The procedure step waiting for the next PDU (at most one).
    let waiters: Waiters<SMPPDU, PairingError.Kind>
    var waiterID: UInt64?
    var timer: (any ScheduledTimer)?
    var timeout: Duration = .seconds(30)
    /// Set when the SMP timer expired: no SMP PDU may be sent on this link again (3.4).
    public private(set) var timedOut = false
    var closedError: LinkError?
    /// False from the moment the channel closed (with `closedError`): the connection reads it
    /// without entering this actor (`Connection.securityManager()`).
    private nonisolated let channelOpen = Atomic<Bool>(true)
    /// A failure found while no procedure step was waiting (a malformed PDU, too many PDUs).
    var pendingFailure: PairingError.Kind?
    var running = false
    var securityRequestHandler: (@Sendable (AuthenticationRequirements) -> Void)?
    /// Our P-256 key pair, made once per link (OOB data refers to it).
    var keyPair: P256KeyPair?
    var localOOB: OOBData?
    /// The agent of the running pairing, and whether both sides set Keypress (3.5.1).
    var pairingAgent: (any PairingAgent)?
    var keypressesAgreed = false
    /// The agent is asking for the passkey typed here: keypress notifications may go out.
    var enteringPasskey = false

    /// Encrypts the link with the key pairing made (Connection.startEncryption).
    let encryptLink: @Sendable (LongTermKey) async throws(ConnectionError) -> Void
    /// As responder: answers the central's LE Long Term Key Request with the key pairing made
    /// and returns at Encryption Change; the closure it is given runs once the answer is in
    /// place (it sends the PDU after which the central starts encryption).
    let acceptLinkEncryption: AcceptEncryption?
    package typealias AcceptEncryption = @Sendable (LongTermKey, _ armed: @escaping @Sendable () -> Void) async throws(ConnectionError) -> Void
    /// How this side answers Pairing Requests (`acceptPairing`); nil refuses them.
    var responder: PairingResponder?
    /// The running responder procedure (a Pairing Failed while it waits for encryption ends it).
    var responderTask: Task<Void, Never>?
    var awaitingEncryption = false
    var failedDuringEncryption: PairingFailedReason?

    init(connection: Connection, channel: any L2CAPChannel, handle: UInt16, local: LEAddress) {
        let peer = connection.peer
        self.init(executor: connection.executor, channel: channel, scheduler: connection.scheduler, peer: peer, local: local, handle: handle,
                  connection: connection, role: connection.role, acceptEncryption: { [weak connection] key, armed throws(ConnectionError) in
            guard let connection else { throw .disconnected(peer: peer, reason: .connectionTerminatedByLocalHost) }
            try await connection.acceptEncryption(longTermKey: key.key, level: key.level, keySize: Int(key.keySize), armed: armed)
        }) { [weak connection] key throws(ConnectionError) in
            guard let connection else { throw .disconnected(peer: peer, reason: .connectionTerminatedByLocalHost) }
            try await connection.startEncryption(longTermKey: key.key, ediv: key.ediv, rand: key.rand, level: key.level, keySize: Int(key.keySize))
        }
    }

    /// A Security Manager over any channel, encrypting with `encryptLink` (the pairing state
    /// machine without a link: fuzzing, tests).
    package init(executor: AdapterExecutor, channel: any L2CAPChannel, scheduler: any TimerScheduler, peer: LEAddress, local: LEAddress,
                 handle: UInt16, connection: Connection? = nil, role: LinkRole = .central,
                 acceptEncryption: AcceptEncryption? = nil,
                 encryptLink: @escaping @Sendable (LongTermKey) async throws(ConnectionError) -> Void) {
        self.executor = executor
        self.role = role
        self.acceptLinkEncryption = acceptEncryption
        self.connection = connection
        self.channel = channel
        self.scheduler = scheduler
        self.peer = peer
        self.local = local
        self.handle = handle
        self.encryptLink = encryptLink
        self.waiters = Waiters(executor: executor, scheduler: scheduler)
    }

    /// Starts taking PDUs from the channel (package use: the fuzz target).
    package func startReceiving() { start() }

    /// Starts taking PDUs from the channel. Called once, on the executor.
    func start() {
        channel.setHandlers(receive: { [weak self] bytes in
            self?.assumeIsolated { $0.received(bytes) }
        }, close: { [weak self] error in
            self?.assumeIsolated { $0.channelClosed(error) }
        })
    }

    /// Whether the channel still carries this link's PDUs.
    nonisolated var isUsable: Bool { channelOpen.load(ordering: .relaxed) }

    /// What to do when the peer sends a Security Request while no pairing runs; without a
    /// handler it is refused with Pairing Not Supported.
    public func onSecurityRequest(_ handler: (@Sendable (AuthenticationRequirements) -> Void)?) {
        securityRequestHandler = handler
    }

    /// This side's LE Secure Connections OOB data (r and C = f4(PKx, PKx, r, 0)) to give the
    /// peer another way before pairing.
    public func localOOBData() throws(CryptoError) -> OOBData {
        if let localOOB { return localOOB }
        let keys = try ownKeyPair()
        let r = UInt128.random(in: .min ... .max)
        let data = OOBData(random: r, confirm: try SMPToolbox.f4(u: keys.publicKey.x, v: keys.publicKey.x, x: r, z: 0))
        localOOB = data
        return data
    }

    func ownKeyPair() throws(CryptoError) -> P256KeyPair {
        if let keyPair { return keyPair }
        let k = try P256KeyPair()
        keyPair = k
        return k
    }

    // MARK: - The channel

    func received(_ bytes: [UInt8]) {
        let pdu: SMPPDU
        do {
            pdu = try SMPPDU(bytes: bytes)
        } catch {
            let reason: PairingFailedReason
            switch error {
            case .unknownCode: reason = .commandNotSupported
            case .empty, .wrongLength: reason = .invalidParameters
            }
            if running {
                fail(.localFailed(reason, detail: "the peer sent a malformed SMP PDU [\(bytes.hexString())]: \(error)"))
            } else {
                send(.pairingFailed(reason))
            }
            return
        }
        switch pdu {
        case .pairingRequest(let preq) where role == .peripheral:
            if running {
                fail(.localFailed(.unspecifiedReason, detail: "the central sent a second Pairing Request during pairing"))
            } else if let responder {
                startResponding(to: preq, responder)
            } else {
                send(.pairingFailed(.pairingNotSupported))
            }
        case .pairingRequest:
            // Only a central initiates pairing (Vol 3, Part H, 2.4.6); this side is the central.
            send(.pairingFailed(.commandNotSupported))
        case .pairingFailed(let reason) where running && awaitingEncryption:
            // The central gave up instead of starting encryption (a confirm value it refused).
            failedDuringEncryption = reason
            responderTask?.cancel()
        case .securityRequest where role == .peripheral:
            // Only a peripheral sends a Security Request (3.5.7).
            send(.pairingFailed(.commandNotSupported))
        case .securityRequest(let authReq) where !running:
            if let securityRequestHandler {
                securityRequestHandler(authReq)
            } else {
                send(.pairingFailed(.pairingNotSupported))
            }
        case .securityRequest:
            // A Security Request during pairing changes nothing (2.4.6).
            return
        case .pairingKeypressNotification(let notification):
            // Progress reports only (3.5.8): never a step of the procedure.
            receivedKeypress(notification)
        default:
            guard running else { return }
            if isWaiting {
                resumeWaiter(.success(pdu))
            } else if inbox.count < 16 {
                inbox.append(pdu)
            } else {
                fail(.localFailed(.unspecifiedReason, detail: "the peer sent more SMP PDUs than pairing takes"))
            }
        }
    }

    func channelClosed(_ error: LinkError) {
        closedError = error
        channelOpen.store(false, ordering: .relaxed)
        timer?.cancel()
        resumeWaiter(.failure(.channelClosed(error)))
        // A responder waiting for its agent or for encryption stops too.
        responderTask?.cancel()
    }

    /// Queues a PDU and (re)starts the SMP timer (Vol 3, Part H, 3.4).
    func send(_ pdu: SMPPDU) {
        guard !timedOut, closedError == nil else { return }
        channel.enqueue(pdu.bytes)
        restartTimer()
    }

    /// (Re)starts the SMP timer while a procedure runs (3.4).
    func restartTimer() {
        guard running else { return }
        timer?.cancel()
        timer = scheduler.schedule(after: timeout) { [weak self] in
            self?.assumeIsolated { $0.timerExpired() }
        }
    }

    func timerExpired() {
        guard running, !timedOut else { return }
        timedOut = true
        resumeWaiter(.failure(.timeout))
        responderTask?.cancel()
    }

    /// The next PDU of the running procedure; a Pairing Failed from the peer becomes its error.
    func next() async throws(PairingError.Kind) -> SMPPDU {
        let result: Result<SMPPDU, PairingError.Kind>
        if timedOut {
            result = .failure(.timeout)
        } else if let pendingFailure {
            self.pendingFailure = nil
            result = .failure(pendingFailure)
        } else if let closedError {
            result = .failure(.channelClosed(closedError))
        } else if !inbox.isEmpty {
            result = .success(inbox.removeFirst())
        } else {
            result = await waiters.wait(cancelled: { _ in .failure(.cancelled) }) { id in waiterID = id }
        }
        let pdu = try result.get()
        if case .pairingFailed(let reason) = pdu { throw .peerFailed(reason) }
        return pdu
    }

    /// Ends the running procedure's current (or next) wait with `kind`.
    func fail(_ kind: PairingError.Kind) {
        if isWaiting { resumeWaiter(.failure(kind)) } else { pendingFailure = kind }
    }

    var isWaiting: Bool { waiterID.map { waiters.contains($0) } ?? false }

    func resumeWaiter(_ result: Result<SMPPDU, PairingError.Kind>) {
        guard let id = waiterID else { return }
        waiterID = nil
        waiters.resume(id, with: result)
    }
}
