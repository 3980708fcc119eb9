import Dispatch
import BLEWire
import BLECore
import BLETransport

/// The ATT bearer of one link, client side (Core Spec 5.4, Vol 3, Part F, 3.3): sends
/// requests one at a time (others queue behind in FIFO order), matches responses, enforces
/// the 30-second transaction timeout, delivers notifications and indications (confirming
/// indications), answers the peer's requests, and fails everything at once when the link
/// closes. It bounds its channel's inbound PDUs to ATT_MTU (23 until exchanged, Vol 3,
/// Part F, 3.2.8 and 3.4.2). Runs on the adapter's executor, so the channel's handlers enter
/// it without a hop.
///
///     let bearer = ATTBearer(channel: channel, scheduler: DispatchTimerScheduler(queue: channel.executor.queue))
///     await bearer.setValueHandler { event in print(event) }
///     _ = try await bearer.exchangeMTU()
///     let rsp = try await bearer.request(.readRequest(handle: 0x0003))   // .readResponse(value: ...)
public actor ATTBearer {
    /// ATT_MTU before an exchange (the LE default, Vol 3, Part F, 3.2.8).
    public static let defaultMTU: UInt16 = 23

    /// The channel carrying the bearer (CID 0x0004 on LE).
    public nonisolated let channel: any L2CAPChannel
    /// Where the transaction timers come from.
    public nonisolated let scheduler: any TimerScheduler
    /// The largest ATT PDU this side can receive (our Rx MTU), at least 23.
    public nonisolated let clientMTU: UInt16
    /// How long a request may wait for its response (30 s in the specification).
    public nonisolated let transactionTimeout: Duration

    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        channel.executor.asUnownedSerialExecutor()
    }

    /// The effective ATT_MTU: min(our Rx MTU, the peer's), at least 23; 23 until exchanged.
    public private(set) var mtu: UInt16 = ATTBearer.defaultMTU
    /// Why the bearer can no longer be used (transaction timeout or link closed), or nil.
    public private(set) var failure: ATTError?
    /// Inbound PDUs dropped because they were malformed, unsolicited or longer than ATT_MTU.
    public private(set) var droppedPDUCount = 0
    /// Inbound PDUs longer than ATT_MTU (Vol 3, Part F, 3.2.8), whatever was done with them:
    /// a response fails its request, a request is answered with Invalid PDU, a notification
    /// or indication is dropped (an indication is still confirmed). Counted whether the
    /// channel refused them unbuffered (`L2CAPChannel.limitInboundSDUs`) or they got here.
    public private(set) var oversizedPDUCount = 0

    /// Read by the channel's receive handler for notifications without entering the actor.
    private nonisolated let route: ValueRoute
    private var valueHandler: (@Sendable (ATTValueEvent) -> Void)? { route.handler }
    private var indicationHandler: (@Sendable (ATTValueEvent, _ confirm: @escaping @Sendable () -> Void) -> Void)?
    /// True from an indication handed to `indicationHandler` until it confirms it.
    private var awaitingConfirmation = false
    private var droppedPDUHandler: (@Sendable ([UInt8], DecodeError) -> Void)?

    private struct Queued {
        let id: Waiters<ATTPDU, ATTError>.ID
        let opcode: ATTOpcode
        let bytes: [UInt8]
    }
    private struct InFlight {
        /// The caller in `requests`; gone from there once it was cancelled, while the
        /// transaction still runs to its end.
        let id: Waiters<ATTPDU, ATTError>.ID
        let opcode: ATTOpcode
        let timer: any ScheduledTimer
        /// The caller already failed with `.unidentifiedOversizedPDU`: the transaction waits
        /// for a response to discard, or for its timeout, which fails the bearer as any other.
        var answeredByRefusal = false
    }
    /// The callers of `request`.
    let requests: Waiters<ATTPDU, ATTError>
    private var queue: [Queued] = []
    private var inFlight: InFlight?

    private var mtuKnown = false
    /// True once this side sent its Exchange MTU Request, which it may do once per
    /// connection (Vol 3, Part F, 3.4.2.1).
    private var mtuRequestSent = false
    /// True while the one Exchange MTU transaction runs.
    private var mtuExchangeRunning = false
    /// Callers of `exchangeMTU()` waiting for that transaction.
    private let mtuWaiters: Waiters<UInt16, ATTError>

    /// A bearer over `channel`. Create it on the adapter executor (from an actor sharing it)
    /// so no SDU arrives before its handlers are installed; elsewhere they are installed by
    /// the next job on the adapter queue.
    public init(channel: any L2CAPChannel, scheduler: any TimerScheduler,
                clientMTU: UInt16 = 517, transactionTimeout: Duration = .seconds(30)) {
        self.channel = channel
        self.scheduler = scheduler
        self.clientMTU = max(clientMTU, ATTBearer.defaultMTU)
        self.transactionTimeout = transactionTimeout
        self.route = ValueRoute(queue: channel.executor.queue)
        self.requests = Waiters(executor: channel.executor, scheduler: scheduler)
        self.mtuWaiters = Waiters(executor: channel.executor, scheduler: scheduler)
        let install = ATTBearer.handlerInstaller(channel: channel, bearer: self, route: route)
        if channel.executor.isOnQueue { install() } else { channel.executor.queue.async(execute: install) }
    }

    /// The channel handlers. Every inbound SDU is first offered to the route's notification
    /// receiver (`ValueRoute.receiver`), the one place a Handle Value Notification is
    /// recognised: the channel's raw receiver for PDUs read whole from a transport's buffer,
    /// and the receive handler below for everything else. A notification goes from there
    /// straight to its handler: entering the actor with `assumeIsolated` costs several
    /// hundred nanoseconds per call, more than the rest of the route together. Other PDUs
    /// enter the actor.
    private static func handlerInstaller(channel: any L2CAPChannel, bearer: ATTBearer, route: ValueRoute) -> @Sendable () -> Void {
        { [weak bearer] in
            channel.setRawReceiver(route.rawReceiver())
            if let bearer { channel.limitInboundSDUs(to: route.maximumPDULength, refused: ATTBearer.refusedHandler(bearer)) }
            channel.setSliceHandlers(
                receive: { [weak bearer] sdu in
                    if sdu.count > route.maximumPDULength {
                        // Longer than ATT_MTU (Vol 3, Part F, 3.2.8): judged by its first
                        // octets and its size, never copied.
                        let head = Array(sdu.prefix(ATTBearer.oversizedHeadLength))
                        let size = sdu.count
                        bearer?.assumeIsolated { $0.receiveOversized(head, size: size) }
                        return
                    }
                    let receiver = route.receiver
                    if sdu.withUnsafeBytes({ receiver($0) }) { return }
                    let bytes = Array(sdu)
                    bearer?.assumeIsolated { $0.receive(bytes) }
                },
                close: { [weak bearer] error in bearer?.assumeIsolated { $0.linkClosed(error) } })
        }
    }

    /// What the channel calls for a PDU it refused as longer than ATT_MTU, unread.
    private static func refusedHandler(_ bearer: ATTBearer) -> @Sendable ([UInt8], Int) -> Void {
        { [weak bearer] head, size in bearer?.assumeIsolated { $0.receiveOversized(head, size: size) } }
    }

    /// ATT_MTU changed: the bound of the route and of the channel's reassembly follow it.
    private func boundInboundPDUs() {
        route.maximumPDULength = Int(mtu)
        channel.limitInboundSDUs(to: Int(mtu), refused: ATTBearer.refusedHandler(self))
    }

    // MARK: Configuration

    /// Sets the receiver of notifications and indications. It runs on the adapter queue and
    /// should return quickly; an indication is confirmed once it returns (unless an
    /// indication handler is set).
    public func setValueHandler(_ handler: @escaping @Sendable (ATTValueEvent) -> Void) {
        route.handler = handler
    }

    /// Sets the receiver of Handle Value Indications (Vol 3, Part F, 3.4.7.2), which decides
    /// when each is confirmed: `confirm` sends the Handle Value Confirmation (3.4.7.3). Call it
    /// once, when the value is safely held; until then the server sends no further indication
    /// (3.3.2), so a slow receiver slows the server. An indication that arrives before the
    /// previous one was confirmed is dropped (`droppedPDUCount`). Runs on the adapter queue.
    ///
    ///     await bearer.setIndicationHandler { event, confirm in buffer.yield(event.value, whenAccepted: confirm) }
    public func setIndicationHandler(_ handler: @escaping @Sendable (ATTValueEvent, _ confirm: @escaping @Sendable () -> Void) -> Void) {
        indicationHandler = handler
    }

    /// Sets the receiver of Handle Value Notifications (Vol 3, Part F, 3.4.7.1 and 3.4.7.4):
    /// once set, every notification goes here instead of the value handler, its value as raw
    /// bytes valid only during the call; a notification that arrived whole in one ACL packet
    /// comes straight from the transport's read buffer, without a copy. It runs on the
    /// adapter queue and should return quickly.
    ///
    ///     await bearer.setNotificationHandler { handle, value in if handle == 0x0012 { parse(value) } }
    public func setNotificationHandler(_ handler: @escaping @Sendable (_ handle: UInt16, _ value: UnsafeRawBufferPointer) -> Void) {
        route.receiver = ValueRoute.receiver(handler)
        channel.setRawReceiver(route.rawReceiver())
    }

    /// Sets an observer of inbound PDUs that were dropped (malformed, or a response with no
    /// request pending), for logging.
    public func setDroppedPDUHandler(_ handler: @escaping @Sendable ([UInt8], DecodeError) -> Void) {
        droppedPDUHandler = handler
    }

    /// Requests waiting behind the one in flight.
    public var queuedRequestCount: Int { queue.count }
    /// True while a request has been sent and its response has not arrived (even when its
    /// caller was cancelled).
    public var hasRequestInFlight: Bool { inFlight != nil }

    /// The longest value a Write Request or Write Command can carry: ATT_MTU - 3.
    public func maximumWriteValueLength(withResponse: Bool) -> Int { Int(mtu) - 3 }

    /// The longest value a Signed Write Command can carry: ATT_MTU - 15.
    public var maximumSignedWriteValueLength: Int { Int(mtu) - 15 }

    // MARK: Requests

    /// Sends `pdu` (a request) once the requests before it are answered and returns the
    /// matching response. An Error Response fails with `.errorResponse`; no response within
    /// `transactionTimeout` fails this and every later call with `.transactionTimeout`, and
    /// a response that comes after that is dropped (Vol 3, Part F, 3.3.3). An Exchange MTU
    /// Request goes out once per bearer (a second fails with `.exchangeMTURepeated`; use
    /// `exchangeMTU()`).
    /// Cancelling the calling task removes a queued request; a request already sent keeps
    /// the bearer waiting for its response, but the caller gets `.cancelled` at once. With
    /// `deadline`, the caller stops waiting after that long with `.deadlinePassed`, the same
    /// way (a whole procedure's limit; the bearer stays usable).
    ///
    ///     guard case .readResponse(let value) = try await bearer.request(.readRequest(handle: 3)) else { ... }
    public func request(_ pdu: ATTPDU, deadline: Duration? = nil) async throws(ATTError) -> ATTPDU {
        let opcode = pdu.opcode
        guard opcode.kind == .request else { throw .notARequest(opcode) }
        if let failure { throw failure }
        let bytes = pdu.bytes
        guard bytes.count <= Int(mtu) else { throw .pduTooLarge(opcode, size: bytes.count, mtu: mtu) }
        if opcode == .exchangeMTURequest {
            guard !mtuRequestSent else { throw .exchangeMTURepeated(mtu: mtu) }
            mtuRequestSent = true
        }
        let expiry = deadline.map { (after: $0, result: Result<ATTPDU, ATTError>.failure(.deadlinePassed(opcode))) }
        let result = await requests.wait(deadline: expiry, cancelled: { [weak self] id in
            self?.assumeIsolated { $0.queue.removeAll { $0.id == id } }
            return .failure(.cancelled(opcode))
        }) { id in
            queue.append(Queued(id: id, opcode: opcode, bytes: bytes))
            startNext()
        }
        return try result.get()
    }

    /// Sends a Write Command or Signed Write Command. It never waits behind a pending
    /// request; it returns once the channel has taken the SDU (the flow control). A cancelled
    /// caller gets `.cancelled` at once; a PDU the channel already queued may still go out.
    ///
    ///     try await bearer.send(command: .writeCommand(handle: 0x0012, value: [0x01]))
    public func send(command pdu: ATTPDU) async throws(ATTError) {
        let opcode = pdu.opcode
        guard opcode.isCommand else { throw .notACommand(opcode) }
        if let failure { throw failure }
        let bytes = pdu.bytes
        guard bytes.count <= Int(mtu) else { throw .pduTooLarge(opcode, size: bytes.count, mtu: mtu) }
        do throws(LinkError) {
            try await channel.send(bytes)
        } catch {
            if case .cancelled = error { throw .cancelled(opcode) }
            throw .linkClosed(error)
        }
    }

    /// Sets ATT_MTU on an enhanced ATT bearer, where it is the smaller of the two L2CAP
    /// channel MTUs and Exchange MTU is not used (Core Spec 5.4 Vol 3, Part F, 3.2.8 and
    /// 3.4.2); `exchangeMTU()` then returns it without a request.
    ///
    ///     await bearer.setEnhancedMTU(UInt16(min(await channel.mtu, await channel.peerMTU)))
    public func setEnhancedMTU(_ mtu: UInt16) {
        self.mtu = max(ATTBearer.defaultMTU, mtu)
        boundInboundPDUs()
        mtuKnown = true
    }

    /// Exchanges MTUs with the server (Vol 3, Part F, 3.4.2) once per bearer and returns the
    /// effective ATT_MTU. The request is sent at most once (3.4.2.1): later calls, and calls
    /// after the peer exchanged, return the known value; after an exchange that failed they
    /// return the current ATT_MTU (23 unless a response came since) and send nothing, or
    /// throw the bearer's failure once it is unusable (a transaction timeout). The error of a
    /// failed exchange is thrown once. Concurrent calls share one exchange; a cancelled caller
    /// gets `.cancelled` at once while the exchange runs on for the others.
    ///
    ///     let mtu = try await bearer.exchangeMTU()   // 247 with a server whose Rx MTU is 247
    public func exchangeMTU() async throws(ATTError) -> UInt16 {
        if mtuKnown { return mtu }
        if let failure { throw failure }
        if mtuRequestSent, !mtuExchangeRunning { return mtu }
        if Task.isCancelled { throw .cancelled(.exchangeMTURequest) }
        if !mtuExchangeRunning {
            mtuExchangeRunning = true
            // Not in the caller's task: cancelling the caller must not withdraw the request
            // the other callers wait for.
            ownedTask { await $0.runMTUExchange() }
        }
        return try await mtuWaiters.wait(cancelled: { _ in .failure(.cancelled(.exchangeMTURequest)) }).get()
    }

    /// The one Exchange MTU transaction; its outcome goes to every caller still waiting.
    private func runMTUExchange() async {
        let result: Result<UInt16, ATTError>
        do throws(ATTError) {
            _ = try await request(.exchangeMTURequest(clientRxMTU: clientMTU))
            result = .success(mtu)
        } catch {
            if case .errorResponse = error { mtuKnown = true }
            result = .failure(error)
        }
        mtuExchangeRunning = false
        mtuWaiters.resumeAll(with: result)
    }

    // MARK: Transactions

    private func startNext() {
        guard inFlight == nil, failure == nil, !queue.isEmpty else { return }
        let next = queue.removeFirst()
        let id = next.id
        // A caller whose deadline passed while it was queued: its request is never sent.
        guard requests.contains(id) else { return startNext() }
        let timer = scheduler.schedule(after: transactionTimeout) { [weak self] in
            self?.assumeIsolated { $0.transactionTimedOut(id) }
        }
        inFlight = InFlight(id: id, opcode: next.opcode, timer: timer)
        let bytes = next.bytes
        ownedTask { await $0.transmit(bytes, transaction: id) }
    }

    /// Runs `work` in a task the link owns (`Central.close()` waits for it), or in one of
    /// the bearer's own over a channel without an owner.
    private func ownedTask(_ work: @escaping @Sendable (isolated ATTBearer) async -> Void) {
        channel.runTask { await work(self) }
    }

    /// Runs `work` in a task the link owns (`Central.close()` cancels and waits for it): work
    /// a procedure leaves behind when it ends early, such as cancelling a prepare queue.
    ///
    ///     await bearer.runOwnedTask { _ = try? await bearer.request(.executeWriteRequest(.cancel)) }
    public func runOwnedTask(_ work: @escaping @Sendable () async -> Void) {
        channel.runTask(work)
    }

    private func transmit(_ bytes: [UInt8], transaction id: UInt64) async {
        do throws(LinkError) {
            try await channel.send(bytes)
        } catch {
            guard let current = inFlight, current.id == id else { return }
            // The channel did not take the PDU (a full queue, no buffer in time): an Exchange
            // MTU Request that never went out may be sent once more.
            if current.opcode == .exchangeMTURequest { mtuRequestSent = false }
            finish(.failure(.linkClosed(error)))
        }
    }

    /// Ends the transaction in flight with `result` and starts the next one.
    private func finish(_ result: Result<ATTPDU, ATTError>) {
        guard let current = inFlight else { return }
        inFlight = nil
        current.timer.cancel()
        requests.resume(current.id, with: result)
        startNext()
    }

    /// No response within the transaction timeout: the transaction has failed and no further
    /// request may be sent on this bearer (Vol 3, Part F, 3.3.3), so a late response can never
    /// answer a later request. Also when a refused PDU failed the caller already: it may have
    /// been a notification, and the response may still come.
    private func transactionTimedOut(_ id: UInt64) {
        guard let current = inFlight, current.id == id else { return }
        failAll(.transactionTimeout(current.opcode))
    }

    private func linkClosed(_ error: LinkError) {
        failAll(.linkClosed(error))
    }

    /// Makes the bearer unusable and fails every pending and queued call with `error`.
    private func failAll(_ error: ATTError) {
        failure = error
        if let current = inFlight {
            inFlight = nil
            current.timer.cancel()
        }
        queue.removeAll()
        requests.failAll(error)
    }

    private func applyMTU(peerRxMTU: UInt16) {
        mtu = max(ATTBearer.defaultMTU, min(clientMTU, peerRxMTU))
        boundInboundPDUs()
        mtuKnown = true
    }

    /// How many octets of an oversized PDU are kept for the dropped-PDU handler.
    static let oversizedHeadLength = 8

    // MARK: Inbound

    /// One inbound SDU, on the adapter queue.
    private func receive(_ sdu: [UInt8]) {
        guard let first = sdu.first else {
            drop(sdu, .truncated(what: "ATT PDU", needed: 1))
            return
        }
        let opcode = ATTOpcode(first)
        switch opcode.kind {
        case .response: receiveResponse(sdu, opcode)
        case .request, .unknown: receiveRequest(sdu, opcode)
        case .notification, .indication: receiveValue(sdu)
        case .command, .confirmation: break   // this client supports no inbound command; it sends no indication
        }
    }

    /// A PDU longer than ATT_MTU, "the maximum size of any packet sent between a client and
    /// a server" (Vol 3, Part F, 3.2.8), of which only the first octets were kept. It is
    /// invalid whatever it holds: a response fails the request in flight, a request gets an
    /// Error Response with Invalid PDU (0x04, 3.4.1.1), a notification is dropped, an
    /// indication is dropped and confirmed (the confirmation only acknowledges receipt; not
    /// sending it would stall the peer's indications until its transaction timeout).
    private func receiveOversized(_ head: [UInt8], size: Int) {
        oversizedPDUCount += 1
        guard let first = head.first else {
            // The channel refused it before its opcode arrived: nothing to judge it by.
            drop(head, .malformed(what: "ATT PDU", detail: "\(size) octets exceed the ATT_MTU of \(mtu) (Vol 3, Part F, 3.2.8); its opcode was not received"))
            failRequestForUnidentifiedPDU(size: size)
            return
        }
        let opcode = ATTOpcode(first)
        drop(head, .malformed(what: opcode.name, detail: "\(size) octets exceed the ATT_MTU of \(mtu) (Vol 3, Part F, 3.2.8)"))
        switch opcode.kind {
        case .response:
            guard let current = inFlight else { return }
            finish(.failure(.oversizedPDU(opcode, size: size, mtu: mtu, request: current.opcode)))
        case .request, .unknown:
            reply(.errorResponse(request: opcode, handle: 0, error: .invalidPDU))
        case .indication:
            reply(.handleValueConfirmation)
        case .notification, .command, .confirmation:
            break
        }
    }

    /// A refused PDU whose opcode never arrived, while a request is in flight: it may be
    /// that request's response (then none follows) or a notification, indication or request
    /// of the peer (then the response follows). Either way the PDU is invalid and the caller
    /// fails at once with `.unidentifiedOversizedPDU`. The transaction stays open until a
    /// response arrives, which is discarded, or until its timeout, which fails the bearer:
    /// a later request is never answered with this one's response.
    private func failRequestForUnidentifiedPDU(size: Int) {
        guard var current = inFlight, !current.answeredByRefusal else { return }
        current.answeredByRefusal = true
        inFlight = current
        requests.resume(current.id, with: .failure(.unidentifiedOversizedPDU(size: size, mtu: mtu, request: current.opcode)))
    }

    private func receiveResponse(_ sdu: [UInt8], _ opcode: ATTOpcode) {
        guard let current = inFlight else {
            drop(sdu, .malformed(what: opcode.name, detail: "no request is pending"))
            return
        }
        if current.answeredByRefusal {
            // The response of a request that already failed (`failRequestForUnidentifiedPDU`).
            // An Exchange MTU Response still sets ATT_MTU: the server applies it as well, and
            // the exchange is made once per connection (Vol 3, Part F, 3.4.2.1).
            if current.opcode == .exchangeMTURequest, case .exchangeMTUResponse(let serverRxMTU)? = try? ATTPDU(bytes: sdu) {
                applyMTU(peerRxMTU: serverRxMTU)
            }
            drop(sdu, .malformed(what: opcode.name, detail: "it answers \(current.opcode.name), which failed when a PDU longer than the ATT_MTU was refused before it"))
            return finish(.failure(.cancelled(current.opcode)))
        }
        let pdu: ATTPDU
        do throws(DecodeError) {
            pdu = try ATTPDU(bytes: sdu)
        } catch {
            finish(.failure(.malformedResponse(request: current.opcode, error)))
            return
        }
        if case .errorResponse(let request, let handle, let code) = pdu {
            finish(.failure(request == current.opcode
                ? .errorResponse(code: code, handle: handle, request: request)
                : .unexpectedResponse(request: current.opcode, response: opcode)))
            return
        }
        guard opcode == current.opcode.responseOpcode else {
            finish(.failure(.unexpectedResponse(request: current.opcode, response: opcode)))
            return
        }
        if case .exchangeMTUResponse(let serverRxMTU) = pdu { applyMTU(peerRxMTU: serverRxMTU) }
        finish(.success(pdu))
    }

    /// The peer's requests: Exchange MTU is answered, everything else is not supported.
    private func receiveRequest(_ sdu: [UInt8], _ opcode: ATTOpcode) {
        if opcode == .exchangeMTURequest {
            do throws(DecodeError) {
                if case .exchangeMTURequest(let clientRxMTU) = try ATTPDU(bytes: sdu) {
                    reply(.exchangeMTUResponse(serverRxMTU: clientMTU))
                    applyMTU(peerRxMTU: clientRxMTU)
                }
            } catch {
                drop(sdu, error)
                reply(.errorResponse(request: opcode, handle: 0, error: .invalidPDU))
            }
        } else {
            reply(.errorResponse(request: opcode, handle: 0, error: .requestNotSupported))
        }
    }

    private func receiveValue(_ sdu: [UInt8]) {
        let pdu: ATTPDU
        do throws(DecodeError) {
            pdu = try ATTPDU(bytes: sdu)
        } catch {
            drop(sdu, error)
            return
        }
        switch pdu {
        case .multipleHandleValueNotification(let values):
            // Each value takes the route of a Handle Value Notification.
            for v in values {
                var single: [UInt8] = [ATTOpcode.handleValueNotification.rawValue, UInt8(v.handle & 0xFF), UInt8(v.handle >> 8)]
                single += v.value
                _ = single.withUnsafeBytes { route.receiver($0) }
            }
        case .handleValueIndication(let handle, let value):
            let event = ATTValueEvent(handle: handle, value: value, isIndication: true)
            guard let indicationHandler else {
                valueHandler?(event)
                reply(.handleValueConfirmation)
                return
            }
            if awaitingConfirmation {
                drop(sdu, .malformed(what: "Handle Value Indication", detail: "it arrived before the previous indication was confirmed"))
                return
            }
            awaitingConfirmation = true
            let executor = channel.executor
            indicationHandler(event) { [weak self] in
                guard let bearer = self else { return }
                if executor.isOnQueue {
                    bearer.assumeIsolated { $0.confirmIndication() }
                } else {
                    executor.queue.async { bearer.assumeIsolated { $0.confirmIndication() } }
                }
            }
        default:
            // Handle Value Notifications never get here: the route's receiver took them
            // (one shorter than 3 octets failed to decode above).
            break
        }
    }

    /// Sends the confirmation of the indication handed to the indication handler.
    private func confirmIndication() {
        guard awaitingConfirmation else { return }
        awaitingConfirmation = false
        reply(.handleValueConfirmation)
    }

    /// Sends a response or confirmation, unless the bearer is no longer usable.
    private func reply(_ pdu: ATTPDU) {
        guard failure == nil else { return }
        // Queued at once so it leaves before anything the application does after seeing the
        // value; a send failure means the link is gone and the close handler reports it.
        channel.enqueue(pdu.bytes)
    }

    private func drop(_ sdu: [UInt8], _ error: DecodeError) {
        droppedPDUCount += 1
        droppedPDUHandler?(sdu, error)
    }
}

/// The value handler, shared by the actor and the channel's receive handler. Its state is
/// confined to the adapter queue, where both run (checked in debug builds).
final class ValueRoute: Sendable {
    struct State {
        var handler: (@Sendable (ATTValueEvent) -> Void)?
        var maximumPDULength = Int(ATTBearer.defaultMTU)
        /// Set with a notification handler; nil hands notifications to `handler`.
        var receiver: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
    }
    private let state: QueueConfined<State>
    /// The receiver until a notification handler is set: notifications go to `handler`.
    private let handlerReceiver: @Sendable (UnsafeRawBufferPointer) -> Bool

    /// A route confined to `queue` (made anywhere; used only there).
    init(queue: DispatchQueue) {
        let state = QueueConfined(State(), on: queue)
        self.state = state
        handlerReceiver = ValueRoute.receiver { handle, value in
            guard let handler = state.value.handler else { return }
            handler(ATTValueEvent(handle: handle, value: Array(value), isIndication: false))
        }
    }

    var handler: (@Sendable (ATTValueEvent) -> Void)? {
        get { state.value.handler }
        set { state.value.handler = newValue }
    }
    /// ATT_MTU: longer inbound PDUs are rejected before anything reads their content.
    var maximumPDULength: Int {
        get { state.value.maximumPDULength }
        set { state.value.maximumPDULength = newValue }
    }
    /// Takes Handle Value Notifications; the rest goes to the bearer. Until a notification
    /// handler is set, it hands them to `handler`.
    var receiver: @Sendable (UnsafeRawBufferPointer) -> Bool {
        get { state.value.receiver ?? handlerReceiver }
        set { state.value.receiver = newValue }
    }

    /// The channel's raw receiver: `receiver` for PDUs no longer than ATT_MTU; a longer one
    /// goes the usual way, which rejects it.
    func rawReceiver() -> @Sendable (UnsafeRawBufferPointer) -> Bool {
        { [receiver] sdu in sdu.count <= self.maximumPDULength && receiver(sdu) }
    }

    /// The receiver for `deliver`: it takes Handle Value Notifications (Vol 3, Part F,
    /// 3.4.7.1: opcode 0x1B, handle, value) and leaves anything else to the bearer. `deliver`
    /// is captured, not looked up, so a notification costs no reference count here.
    static func receiver(_ deliver: @escaping @Sendable (UInt16, UnsafeRawBufferPointer) -> Void)
        -> @Sendable (UnsafeRawBufferPointer) -> Bool {
        { sdu in
            guard let handle = ATTPDU.notificationHandle(in: sdu) else { return false }
            deliver(handle, UnsafeRawBufferPointer(rebasing: sdu[3...]))
            return true
        }
    }
}
