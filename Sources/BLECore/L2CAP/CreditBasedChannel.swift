import BLEWire

/// One LE credit-based connection-oriented channel over the host's ACL path (Core Spec 5.4
/// Vol 3, Part A, 3.4 and 10.1). SDUs go out segmented by the peer's MPS and only with the
/// peer's credits; SDUs come in reassembled, and credits go back to the peer as the
/// application takes them, so what waits here is bounded by the credits this side granted.
/// Runs on the adapter executor, like the host and the connection.
///
///     let channel = try await connection.openL2CAPChannel(psm: 0x0080, mtu: 2048)
///     try await channel.send(Array("hello".utf8))
///     for try await sdu in channel.sdus { print(sdu) }
public actor CreditBasedChannel: AdapterIsolated {
    public nonisolated let executor: AdapterExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let peer: LEAddress
    /// Connection_Handle of the link.
    public nonisolated let handle: UInt16
    public nonisolated let psm: UInt16
    /// The CID this side receives on (its Source CID).
    public nonisolated let localCID: UInt16
    /// The CID the peer receives on (this side's Destination CID).
    public nonisolated let remoteCID: UInt16
    /// The largest SDU and K-frame payload this side accepts (a reconfiguration can raise the
    /// MTU and change the MPS of an enhanced channel).
    public private(set) var mtu: Int
    public private(set) var mps: Int
    /// The largest SDU and K-frame payload the peer accepts.
    public private(set) var peerMTU: Int
    public private(set) var peerMPS: Int
    /// The credits this side grants the peer and keeps topped up (the receive window).
    public nonisolated let receiveWindow: Int
    /// True for a channel opened with the enhanced Credit Based Connection Request (Vol 3,
    /// Part A, 4.25), which can be reconfigured.
    public nonisolated let isEnhanced: Bool
    weak var host: HCIHost?
    let scheduler: any TimerScheduler

    // Unchecked exclusivity on the per-K-frame state: it is touched only on the executor, one
    // job at a time, and the dynamic checks were a measurable part of a small SDU's cost.
    /// Every credit of the channel but those lent to `writer` (CreditBasedChannelCredits.swift).
    @exclusivity(unchecked) var credits: CreditBasedChannelCredits
    @exclusivity(unchecked) var reassembler: KFrameReassembler
    /// Complete SDUs not handed to the reader yet, with the K-frames each used.
    @exclusivity(unchecked) var inbox: [SDUReader.Entry] = []
    /// An emptied batch the reader gave back, reused as the next inbox.
    @exclusivity(unchecked) var spare: [SDUReader.Entry] = []
    /// The reader's side: the batch it took in its last hop, iterated off the executor.
    nonisolated let reader: SDUReader
    /// True while the reader holds SDUs it has not come back after (its batch is not used up).
    var readerHolds = false
    /// The task waiting in `receive` (one at a time) for a batch (nil: closed), the senders
    /// waiting for credits and the closers waiting for the Disconnection Response.
    let receivers: Waiters<[SDUReader.Entry]?, L2CAPChannelError>
    let senders: Waiters<Void, L2CAPChannelError>
    let closers: Waiters<Void, Never>
    /// Closers waiting for the SDUs accepted before `close` to reach the link.
    let drainers: Waiters<Void, Never>
    @exclusivity(unchecked) var sendQueue: [PendingSDU] = []
    /// Set by `close` while the SDUs accepted before it still go out: no send is taken.
    @exclusivity(unchecked) var closing = false
    /// The sending side for senders off the executor: credits lent, SDUs handed over.
    nonisolated let writer: SDUWriter
    /// Set through `CreditBasedSDUChannel`: complete SDUs go here as they arrive (their
    /// credits go back at once) instead of waiting for `receive`, and the end is reported once.
    var sduHandler: (@Sendable (ArraySlice<UInt8>) -> Void)?
    var endHandler: (@Sendable (LinkError) -> Void)?
    /// Set when the channel ended; `.closedByPeer` and `.closed` end the SDU sequence normally.
    public private(set) var endError: L2CAPChannelError?
    var disconnectSent = false

    /// Counters for summaries: bytes each way and how often a send waited for credits.
    @exclusivity(unchecked) public private(set) var bytesSent = 0
    public private(set) var bytesReceived = 0
    public private(set) var creditStalls = 0
    /// How often sending waited for room in the link's ACL queue (credits in hand).
    public private(set) var linkQueueStalls = 0
    /// True while K-frames wait for room in the link's queue (`waitForLinkRoom`).
    @exclusivity(unchecked) var awaitsLinkRoom = false
    /// K-frames received: progress on an SDU that has not completed yet.
    public private(set) var framesReceived = 0
    /// SDUs accepted (their `send` had returned, or given up once started) that the channel
    /// dropped before all their K-frames reached the link, because it ended first: the peer
    /// closed it, the link went, or `close` timed out. Each is logged too.
    public private(set) var unsentSDUs = 0

    init(host: HCIHost, handle: UInt16, peer: LEAddress, psm: UInt16, localCID: UInt16, remoteCID: UInt16,
         mtu: Int, mps: Int, receiveWindow: Int, peerMTU: Int, peerMPS: Int, peerCredits: Int, isEnhanced: Bool = false) {
        self.executor = host.executor
        self.host = host
        self.scheduler = host.scheduler
        self.handle = handle
        self.peer = peer
        self.psm = psm
        self.localCID = localCID
        self.remoteCID = remoteCID
        self.mtu = mtu
        self.mps = mps
        self.receiveWindow = receiveWindow
        self.isEnhanced = isEnhanced
        self.peerMTU = peerMTU
        self.peerMPS = peerMPS
        self.credits = CreditBasedChannelCredits(peerCredits: peerCredits, receiveWindow: receiveWindow)
        self.reassembler = KFrameReassembler(mtu: mtu, mps: mps)
        self.reader = SDUReader(receiveWindow: receiveWindow)
        self.writer = SDUWriter(peerMTU: peerMTU, peerMPS: peerMPS)
        // The queue is empty: the peer's initial credits are lent to senders at once.
        writer.credits.store(credits.lendSendCredits(), ordering: .relaxed)
        self.receivers = Waiters(executor: host.executor, scheduler: host.scheduler)
        self.senders = Waiters(executor: host.executor, scheduler: host.scheduler)
        self.closers = Waiters(executor: host.executor, scheduler: host.scheduler)
        self.drainers = Waiters(executor: host.executor, scheduler: host.scheduler)
    }

    nonisolated var peerName: String { "\(peer.address)" }

    /// Credits this side holds to send K-frames now.
    public var sendCredits: Int { credits.sendCredits + writer.credits.load(ordering: .relaxed) }
    public var isOpen: Bool { endError == nil }

    // MARK: - Sending

    /// Sends one SDU: segments it by the peer's MPS and hands each K-frame to the link as a
    /// credit allows. Returns once the SDU holds the credits of all its K-frames and is queued
    /// in order after earlier SDUs (they reach the link in the executor's next turn), or once
    /// every K-frame it waited for is queued on the link. K-frames wait in the channel while the
    /// link's ACL queue is full (the controller is not acknowledging) and go when it drains.
    /// Throws `.creditTimeout` when the peer grants no credits for `timeout`,
    /// `.linkQueueTimeout` when the link's queue stays full for `timeout`, and `.cancelled`
    /// when the calling task is cancelled: an
    /// SDU none of whose K-frames went out is dropped; a started one is finished when credits
    /// come, so the peer never sees half. Runs on the caller's executor: with credits in hand
    /// it costs no hop (a burst of SDUs costs one job on the channel's executor).
    ///
    ///     try await channel.send(bytes, timeout: .seconds(10))
    public nonisolated(nonsending) func send(_ sdu: [UInt8], timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) {
        if let first = writer.hand(sdu) {
            if first { executor.queue.async { self.runIsolated(()) { channel, _ in channel.pumpSend() } } }
            return
        }
        try await sendWaiting(sdu, timeout: timeout)
    }

    /// `send` on the executor: queues the SDU, sends what credits allow and waits for the rest.
    func sendWaiting(_ sdu: [UInt8], timeout: Duration) async throws(L2CAPChannelError) {
        if let endError { throw endError }
        if closing { throw .closed(peer: peerName, cid: localCID) }
        guard sdu.count <= peerMTU else { throw .sduTooLarge(size: sdu.count, peerMTU: peerMTU) }
        let pending = PendingSDU(sdu)
        queue(pending)
        if pending.isSent { return }
        if !awaitsLinkRoom { creditStalls += 1 }
        let peer = peerName, cid = localCID
        let result = await senders.wait(
            deadline: (timeout, .failure(.creditTimeout(peer: peer, cid: cid, after: timeout))),
            cancelled: { [weak self] id in
                self?.assumeIsolated { $0.dropUnstarted(waiter: id) }
                return .failure(.cancelled(peer: peer, cid: cid))
            }) { id in pending.waiter = id }
        if case .failure = result, !pending.isStarted { sendQueue.removeAll { $0 === pending } }
        if case .failure(.creditTimeout) = result, awaitsLinkRoom {
            throw .linkQueueTimeout(peer: peer, cid: cid, after: timeout)
        }
        try result.get()
    }

    /// Queues an SDU after those handed over off the executor, and sends what credits allow.
    func queue(_ pending: PendingSDU) {
        takeWriterSDUs()
        sendQueue.append(pending)
        pumpSend()
    }

    /// Queues the SDUs senders handed to the writer, with the credits they took, and takes back
    /// the credits lent and not taken: from here on the channel spends them. `closing` also
    /// stops the writer taking SDUs (`SDUWriter.close`).
    func takeWriterSDUs(closing: Bool = false) {
        let adopt = { (pending: PendingSDU) in
            guard self.endError == nil else { return }
            self.credits.restoreSendCredits(pending.prepaid)
            pending.prepaid = 0
            self.sendQueue.append(pending)
        }
        if closing { writer.close(adopt) } else { writer.take(adopt) }
        credits.restoreSendCredits(writer.credits.exchange(0, ordering: .relaxed))
    }

    /// Sends queued K-frames while credits last, head of the queue first. An SDU not started
    /// whose sender stopped waiting (timed out or cancelled) is dropped. When the queue is
    /// empty, the credits left are lent to the writer. K-frames reach the link's queue in
    /// batches: one entry into the host for its room, one for the K-frames that fit; the
    /// queue may then have handed some to the controller, so a full batch is followed by another.
    func pumpSend() {
        guard endError == nil else { return }
        takeWriterSDUs()
        // One weak load per pump, not per batch.
        let host = self.host, handle = self.handle, cid = remoteCID
        while true {
            // A gone host takes everything: the channel is ending and its K-frames go nowhere.
            var room = host.map { $0.runIsolated(handle) { host, handle in host.linkQueueRoom(handle: handle) } } ?? .unbounded
            var frames: [[UInt8]] = []
            let stop = segmentQueued(into: &frames, room: &room)
            if let host, !frames.isEmpty {
                host.runIsolated((frames, handle, cid)) { host, k in host.enqueueKFrames(k.0, handle: k.1, channelID: k.2) }
            }
            switch stop {
            case .credits: return
            case .linkQueue:
                if frames.isEmpty { return waitForLinkRoom() }
            // Everything is on the link: a close waiting for that goes on; else the credits
            // left are lent to senders off the executor.
            case .queueEmpty:
                if closing {
                    drainers.resumeAll(with: .success(()))
                } else {
                    writer.credits.add(credits.lendSendCredits(), ordering: .relaxed)
                }
                return
            }
        }
    }

    /// Why `segmentQueued` stopped: no credit left, no room left in the link's queue, or
    /// every queued SDU segmented.
    enum SendStop { case credits, linkQueue, queueEmpty }

    /// Segments the queued SDUs into `frames`, a K-frame per credit while `room` takes it.
    /// Back-pressure from the link: a K-frame that finds no room stays unbuilt, never dropped,
    /// until the link's queue drains.
    func segmentQueued(into frames: inout [[UInt8]], room: inout LinkQueueRoom) -> SendStop {
        let cid = remoteCID
        // SDUs done are removed at once at the end: a batch handed over can be long.
        var done = 0
        defer { sendQueue.removeFirst(done) }
        while done < sendQueue.count {
            let head = sendQueue[done]
            if !head.isStarted, let waiter = head.waiter, !senders.contains(waiter) {
                done += 1
                continue
            }
            if !head.isStarted { head.mps = peerMPS }
            while !head.isSent {
                guard credits.sendCredits > 0 else { return .credits }
                let bytes = 4 + (head.isStarted ? 0 : 2) + KFrameSegmenter.data(sduSize: head.sdu.count, from: head.offset, mps: head.mps).count
                guard room.take(bytes: bytes) else { return .linkQueue }
                _ = credits.handle(.kFrameSent)
                let (pdu, end) = KFrameSegmenter.pdu(of: head.sdu, from: head.offset, mps: head.mps, channelID: cid)
                head.offset = end
                head.next += 1
                frames.append(pdu)
            }
            done += 1
            bytesSent += head.sdu.count
            if let waiter = head.waiter { senders.resume(waiter, with: .success(())) }
        }
        return .queueEmpty
    }

    /// The link's queue is full: sending goes on when it frees room (one wake-up at a time).
    func waitForLinkRoom() {
        guard !awaitsLinkRoom, let host else { return }
        awaitsLinkRoom = true
        linkQueueStalls += 1
        host.assumeIsolated { [handle] host in
            host.whenLinkQueueHasRoom(handle: handle) { [weak self] in
                self?.assumeIsolated { channel in
                    channel.awaitsLinkRoom = false
                    channel.pumpSend()
                }
            }
        }
    }

    /// A cancelled sender's SDU leaves the queue when none of its K-frames went out.
    func dropUnstarted(waiter id: Waiters<Void, L2CAPChannelError>.ID) {
        sendQueue.removeAll { $0.waiter == id && !$0.isStarted }
    }

    /// A Flow Control Credit Indication from the peer.
    func peerGranted(_ count: Int) {
        guard endError == nil else { return }
        perform(credits.handle(.peerGranted(count)))
    }

    /// Carries out what the channel's credits ask for (`CreditBasedChannelCredits.Action`).
    func perform(_ actions: [CreditBasedChannelCredits.Action]) {
        for action in actions {
            switch action {
            case .sendKFrames:
                pumpSend()
            case .grantCredits(let n):
                guard let host else { continue }
                host.runIsolated((handle, localCID, UInt16(n))) { host, c in
                    host.sendCreditIndication(handle: c.0, cid: c.1, credits: c.2)
                }
            case .peerStarved(let value):
                // The reader reports SDUs at once while the peer has no credit.
                reader.starved.store(value, ordering: .relaxed)
            case .close(let error):
                protocolViolation(error)
            }
        }
    }

    // MARK: - Reconfiguring (enhanced channels)

    /// Raises this side's MTU (and sets its MPS) with an L2CAP_CREDIT_BASED_RECONFIGURE_REQ
    /// (Vol 3, Part A, 4.27); returns once the peer accepted. For several channels of a link
    /// at once, see `Connection.reconfigureL2CAPChannels`.
    ///
    ///     try await channel.reconfigure(mtu: 4096)
    public func reconfigure(mtu: Int, mps: Int? = nil, timeout: Duration = .seconds(30)) async throws(L2CAPChannelError) {
        guard let host else { throw .closed(peer: peerName, cid: localCID) }
        try await host.reconfigureCreditBasedChannels(handle: handle, localCIDs: [localCID], mtu: mtu, mps: mps, timeout: timeout)
    }

    /// The peer accepted this side's new MTU and MPS.
    func reconfigured(mtu: Int, mps: Int) {
        self.mtu = mtu
        self.mps = mps
        reassembler.mtu = mtu
        reassembler.mps = mps
    }

    /// The peer announced a new MTU and MPS (its Reconfigure Request): SDUs not started yet
    /// go out in K-frames of the new MPS; a started one keeps the MPS it started with.
    func peerReconfigured(mtu: Int, mps: Int) {
        // SDUs handed over were counted at the old MPS: they are queued here and their credits
        // spent again one per K-frame.
        takeWriterSDUs()
        peerMTU = mtu
        peerMPS = mps
        writer.peerMTU.store(mtu, ordering: .relaxed)
        writer.peerMPS.store(mps, ordering: .relaxed)
        pumpSend()
    }

    // MARK: - Receiving

    /// The SDUs as they arrive, in order. Ends when either side closes the channel; throws
    /// when it ends for another reason (link lost, malformed K-frame). One reader at a time.
    public nonisolated var sdus: SDUSequence { SDUSequence(channel: self) }

    /// The next SDU, or nil once the channel was closed (by either side) and everything that
    /// arrived before was taken. Returns the SDU's credits to the peer. `timeout` nil waits
    /// until data or close; cancelling the task ends the wait with `.cancelled`. Runs on the
    /// caller's executor: it hops to the channel only when the SDUs taken in its last hop are
    /// used up, and then takes every SDU waiting.
    ///
    ///     while let sdu = try await channel.receive(timeout: .seconds(2)) { use(sdu) }
    public nonisolated(nonsending) func receive(timeout: Duration? = nil) async throws(L2CAPChannelError) -> [UInt8]? {
        let reader = self.reader
        guard !reader.busy.exchange(true, ordering: .acquiring) else { throw .receiveInProgress(cid: localCID) }
        defer { reader.busy.store(false, ordering: .releasing) }
        if let sdu = reader.next(report: reportTaken) { return sdu }
        let (drained, consumed) = reader.drain()
        guard let batch = try await nextBatch(taken: consumed, drained: drained, timeout: timeout) else { return nil }
        return reader.start(batch, report: reportTaken)
    }

    /// Credits the K-frames of SDUs the reader took, from its thread: one job on the executor.
    nonisolated func reportTaken(_ frames: Int) {
        let executor = self.executor
        executor.queue.async { self.runIsolated(frames) { channel, frames in channel.taken(frames) } }
    }

    /// The reader took SDUs of `frames` K-frames.
    func taken(_ frames: Int) {
        perform(credits.handle(.consumed(frames: frames, all: false)))
    }

    /// The reader's hop: it took everything it held (`taken` K-frames not reported yet) and
    /// gives back its emptied batch; it gets every SDU waiting, or waits for the next one.
    func nextBatch(taken frames: Int, drained: [SDUReader.Entry], timeout: Duration?) async throws(L2CAPChannelError) -> [SDUReader.Entry]? {
        readerHolds = false
        if spare.capacity < drained.capacity { spare = drained }
        if !inbox.isEmpty {
            let batch = handOver()
            perform(credits.handle(.consumed(frames: frames, all: false)))
            return batch
        }
        _ = credits.handle(.partialSDUAwaited(framesInSDU: reassembler.framesInSDU))
        // The reader is idle now: what it took goes back whole, not in quarter-window batches.
        perform(credits.handle(.consumed(frames: frames, all: true)))
        if let endError { return try Self.ending(endError) }
        guard receivers.isEmpty else { throw .receiveInProgress(cid: localCID) }
        let peer = peerName, cid = localCID
        return try await receivers.wait(
            deadline: timeout.map { ($0, .failure(.receiveTimeout(peer: peer, cid: cid, after: $0))) },
            cancelled: { _ in .failure(.cancelled(peer: peer, cid: cid)) }).get()
    }

    static func ending(_ error: L2CAPChannelError) throws(L2CAPChannelError) -> [SDUReader.Entry]? {
        switch error {
        case .closed, .closedByPeer: return nil
        default: throw error
        }
    }

    /// Every SDU waiting, for the reader, which holds them from now on.
    func handOver() -> [SDUReader.Entry] {
        let batch = inbox
        inbox = spare
        spare = []
        readerHolds = true
        return batch
    }

    /// `deliver` from the link's inlet or the host's routing, on the adapter queue: the payload
    /// is passed, not captured, so a K-frame costs no closure context.
    nonisolated func deliverOnQueue(_ payload: ArraySlice<UInt8>) {
        runIsolated(payload) { channel, payload in payload.withUnsafeBytes { channel.deliver($0) } }
    }

    /// The same for a K-frame read in place from a transport's buffer (`ACLInlet.deliverRawPDU`).
    nonisolated func deliverOnQueue(_ payload: UnsafeRawBufferPointer) {
        runIsolated(payload) { channel, payload in channel.deliver(payload) }
    }

    /// One K-frame's information payload for this channel, valid only during the call.
    func deliver(_ payload: UnsafeRawBufferPointer) {
        guard endError == nil else { return }
        framesReceived += 1
        let received = credits.handle(.kFrameReceived)
        if !received.isEmpty {
            perform(received)
            guard endError == nil else { return }
        }
        do throws(KFrameError) {
            guard let (sdu, frames) = try reassembler.receive(payload) else {
                // Mid-SDU: when the application has taken everything, the partial SDU is what
                // it waits for, so its K-frames are credited back at once.
                if inbox.isEmpty, !readerHolds { perform(credits.handle(.partialKFrameConsumed)) }
                return
            }
            bytesReceived += sdu.count
            let owed = credits.sduReassembled(frames: frames)
            if let sduHandler {
                perform(credits.handle(.consumed(frames: owed, all: false)))
                sduHandler(sdu[...])
            } else {
                inbox.append((sdu, owed))
                // A waiting reader takes it now; SDUs that come before it is back wait for its next hop.
                if !receivers.isEmpty { receivers.resumeFirst(with: .success(handOver())) }
            }
        } catch {
            protocolViolation(error)
        }
    }

    // MARK: - Ending

    /// Closes the channel. SDUs whose `send` returned go out first, whole (a waiting send
    /// whose SDU is started too): close waits up to `timeout` for their K-frames to reach the
    /// link (credits and link queue room), then sends Disconnection Request and waits up to
    /// `timeout` for the response. A send not accepted yet, or one that comes during the close,
    /// fails with `.closed`; so do pending receives, and SDUs already received are dropped.
    /// Accepted SDUs still unsent after the timeout are dropped, logged and counted
    /// (`unsentSDUs`).
    ///
    ///     await channel.close()
    public func close(timeout: Duration = .seconds(5)) async {
        guard endError == nil else { return }
        if !closing { beginClosing() }
        if !sendQueue.isEmpty {
            _ = await drainers.wait(deadline: (timeout, .success(())), cancelled: { _ in .success(()) })
        }
        if endError == nil { end(.closed(peer: peerName, cid: localCID), sendDisconnect: true) }
        guard disconnectSent, host != nil else { return }
        _ = await closers.wait(deadline: (timeout, .success(())), cancelled: { _ in .success(()) })
    }

    /// Stops taking sends: SDUs handed over off the executor before this stay queued, with
    /// their credits; senders waiting on an SDU none of whose K-frames went out fail with
    /// `.closed`. What stays goes out as credits and link room allow (`pumpSend`).
    func beginClosing() {
        closing = true
        takeWriterSDUs(closing: true)
        let error = L2CAPChannelError.closed(peer: peerName, cid: localCID)
        sendQueue.removeAll { pending in
            guard !pending.isStarted, let waiter = pending.waiter else { return false }
            senders.resume(waiter, with: .failure(error))
            return true
        }
        pumpSend()
    }

    /// The link went away: everything pending fails at once.
    func linkLost(_ error: LinkError) {
        end(.link(error), sendDisconnect: false)
        disconnectAnswered()
    }

    func disconnectAnswered() {
        closers.resumeAll(with: .success(()))
    }

    /// K-frames of this channel waited in the link's queue past its send timeout and were
    /// dropped (`HCIHost.creditBasedKFramesTimedOut`): the peer's SDU is broken, so the channel
    /// ends with `error` and asks the peer to close it.
    func kFramesTimedOut(_ error: LinkError) {
        end(.link(error), sendDisconnect: true)
    }

    /// The peer sent a K-frame or credit count that breaks the rules: close this channel only.
    func protocolViolation(_ error: KFrameError) {
        host?.assumeIsolated { [peerName, localCID] in $0.logger.log(.warning, "\(peerName): closing L2CAP channel \(localCID.hex): \(error)") }
        end(.malformedKFrame(peer: peerName, cid: localCID, error), sendDisconnect: true)
    }

    /// Ends the channel with `error`: fails every waiter at once and, for a local close,
    /// sends Disconnection Request.
    func end(_ error: L2CAPChannelError, sendDisconnect: Bool) {
        guard endError == nil else { return }
        endError = error
        _ = credits.handle(.ended)
        writer.close { sendQueue.append($0) }
        // SDUs whose sender no longer waits were accepted: dropping them is logged and counted.
        let unsent = sendQueue.count { pending in pending.waiter.map { !senders.contains($0) } ?? true }
        if unsent > 0 {
            unsentSDUs += unsent
            host?.assumeIsolated { [peerName, localCID] in
                $0.logger.log(.warning, "\(peerName): L2CAP channel \(localCID.hex) ended (\(error)) with \(unsent) accepted SDU(s) not fully sent; they were dropped")
            }
        }
        sendQueue.removeAll()
        senders.failAll(error)
        drainers.resumeAll(with: .success(()))
        switch error {
        case .closed, .malformedKFrame:
            // What was received is dropped, the reader's batch in hand too.
            inbox.removeAll()
            reader.discarded.store(true, ordering: .relaxed)
        default:
            break
        }
        if !receivers.isEmpty {
            if !inbox.isEmpty {
                receivers.resumeFirst(with: .success(handOver()))
            } else {
                do throws(L2CAPChannelError) { receivers.resumeAll(with: .success(try Self.ending(error))) } catch { receivers.failAll(error) }
            }
        }
        reassembler.reset()
        if let endHandler {
            self.endHandler = nil
            sduHandler = nil
            endHandler(linkError(error))
        }
        let handle = self.handle, local = localCID, remote = remoteCID
        disconnectSent = sendDisconnect
        host?.assumeIsolated { host in
            host.creditBasedChannelEnded(handle: handle, localCID: local, remoteCID: remote, sendDisconnect: sendDisconnect)
        }
        if !sendDisconnect { disconnectAnswered() }
    }

    /// The SDUs of a channel as an async sequence (see `CreditBasedChannel.sdus`).
    public struct SDUSequence: AsyncSequence, Sendable {
        public typealias Element = [UInt8]
        let channel: CreditBasedChannel

        public struct AsyncIterator: AsyncIteratorProtocol {
            let channel: CreditBasedChannel
            public mutating func next() async throws(L2CAPChannelError) -> [UInt8]? {
                try await channel.receive()
            }

            public mutating func next(isolation actor: isolated (any Actor)?) async throws(L2CAPChannelError) -> [UInt8]? {
                try await channel.receive()
            }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(channel: channel) }
    }
}
