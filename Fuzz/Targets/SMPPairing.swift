import Dispatch
import Synchronization
import BLECore
import SMP
import BLEWire

/// The pairing state machine (Vol 3, Part H, 2.3 and 3): a Security Manager pairs as the
/// initiator, or (agent octet bit 6) answers as the responder, while the input plays the
/// peer. Input: an options octet, an agent octet, then PDUs, each a length octet and that
/// many octets, with a step of virtual time after each. Property: no trap, and a pairing
/// always ends (at the latest when the 30 s SMP timeout of 3.4 fires on the virtual clock)
/// within a few seconds of real time.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(Array(UnsafeBufferPointer(start: data, count: size)))
    let flags = input.u8()
    var options = PairingOptions()
    options.ioCapability = IOCapability(rawValue: flags % 5)
    options.secureConnections = flags & 0x08 == 0
    options.mitm = flags & 0x10 != 0
    options.bonding = flags & 0x20 == 0
    options.secureConnectionsOnly = flags & 0x40 != 0
    if flags & 0x80 != 0 { options.peerOOBData = OOBData(random: 1, confirm: 2) }
    let agent = FuzzAgent(answers: input.u8())
    options.keypressNotifications = agent.answers & 0x08 != 0
    if agent.answers & 0x10 != 0 { options.legacyOOBTemporaryKey = 3 }
    options.initiatorKeys = agent.answers & 0x20 != 0 ? [.encryptionKey, .identityKey, .signingKey] : []

    let responder = agent.answers & 0x40 != 0
    if responder { options.initiatorKeys = [.encryptionKey, .identityKey, .signingKey] }

    let clock = FuzzClock(queue: FuzzHarness.executor.queue)
    let channel = FuzzChannel(executor: FuzzHarness.executor)
    // As responder the link "encrypts" as soon as the last PDU of phase 2 is out.
    let manager = SecurityManager(executor: FuzzHarness.executor, channel: channel, scheduler: clock, peer: FuzzHarness.peer,
                                  local: FuzzHarness.local, handle: 0x0040, role: responder ? .peripheral : .central,
                                  acceptEncryption: { _, armed throws(ConnectionError) in armed() }) { _ throws(ConnectionError) in }
    let done = DispatchSemaphore(value: 0)
    FuzzHarness.executor.queue.sync {
        manager.assumeIsolated { $0.startReceiving() }
    }
    if responder {
        FuzzHarness.executor.queue.sync {
            manager.assumeIsolated { $0.acceptPairingRequests(options: options, agent: agent) { _ in done.signal() } }
        }
    } else {
        Task {
            await manager.onSecurityRequest { _ in }
            _ = try? await manager.pair(options: options, agent: agent)
            done.signal()
        }
        // The peer speaks once the Pairing Request is out.
        fuzzCheck(channel.firstSend.wait(timeout: .now() + .seconds(10)) == .success, "no Pairing Request was sent")
    }
    while !input.isAtEnd {
        let pdu = input.take(Int(input.u8() % 80))
        FuzzHarness.executor.queue.sync { channel.deliver(pdu) }
        clock.advance(by: .milliseconds(Int64(input.u8()) * 100))
    }
    // Past the SMP timeout: whatever step the pairing waits in, it ends. A step still
    // computing (P-256) arms its timer later, so the clock moves on a few times.
    // A responder whose input never started a pairing has nothing to end.
    var ended = responder && !FuzzHarness.executor.queue.sync { manager.assumeIsolated { $0.isPairing } }
    for _ in 0..<10 where !ended {
        clock.advance(by: .seconds(31))
        ended = done.wait(timeout: .now() + .seconds(2)) == .success
    }
    fuzzCheck(ended, "pairing did not end after the SMP timeout")
    return 0
}

enum FuzzHarness {
    static let executor = AdapterExecutor(label: "fuzz.smp")
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)
    static let local = LEAddress(BluetoothAddress(rawValue: 0x00_1B_DC_0F_00_01), type: .public)
}

/// A person who answers from one octet: a passkey (typed with keypress notifications), and
/// yes or no. The octet's bits 3 to 5 choose keypress notifications, a legacy OOB TK and the
/// keys this side distributes.
struct FuzzAgent: PairingAgent {
    let answers: UInt8
    func displayPasskey(_ passkey: UInt32, peer: LEAddress) async {}
    func requestPasskey(peer: LEAddress, keypresses: KeypressReporter) async -> UInt32? {
        await keypresses.notify(.passkeyEntryStarted)
        await keypresses.notify(.passkeyDigitEntered)
        await keypresses.notify(.passkeyEntryCompleted)
        return answers & 1 == 0 ? UInt32(answers) * 3907 : nil
    }
    func peerKeypress(_ notification: KeypressNotificationType, peer: LEAddress) {}
    func confirmNumericComparison(_ value: UInt32, peer: LEAddress) async -> Bool { answers & 2 == 0 }
    func confirmJustWorks(peer: LEAddress) async -> Bool { answers & 4 == 0 }
}

/// The SMP channel: takes what the manager sends, hands it what the input says.
final class FuzzChannel: L2CAPChannel, @unchecked Sendable { // every field is used on `executor`'s queue only
    let executor: AdapterExecutor
    var peerDescription: String { "C0:11:22:33:44:55" }
    private var receive: (@Sendable ([UInt8]) -> Void)?
    private var sent = 0
    /// Signalled when the first PDU (the Pairing Request) goes out.
    let firstSend = DispatchSemaphore(value: 0)

    init(executor: AdapterExecutor) { self.executor = executor }

    func send(_ sdu: [UInt8]) async throws(LinkError) { enqueue(sdu) }
    func enqueue(_ sdu: [UInt8]) {
        sent &+= 1
        if sent == 1 { firstSend.signal() }
    }
    func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        self.receive = receive
    }
    func deliver(_ pdu: [UInt8]) { receive?(pdu) }
}

/// Virtual time: timers fire on the adapter queue when the input advances the clock.
final class FuzzClock: TimerScheduler {
    struct Timer: ScheduledTimer {
        let id: Int
        let clock: FuzzClock
        func cancel() { clock.state.withLock { $0.timers[id] = nil } }
    }
    struct State {
        var now = ContinuousClock.now
        var nextID = 0
        var timers: [Int: (ContinuousClock.Instant, @Sendable () -> Void)] = [:]
    }
    let state = Mutex(State())
    let queue: DispatchQueue

    init(queue: DispatchQueue) { self.queue = queue }

    func now() -> ContinuousClock.Instant { state.withLock { $0.now } }

    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        state.withLock { s in
            s.nextID += 1
            s.timers[s.nextID] = (s.now.advanced(by: delay), work)
            return Timer(id: s.nextID, clock: self)
        }
    }

    /// Moves the clock and runs, on the queue, every timer that is due.
    func advance(by duration: Duration) {
        let due: [@Sendable () -> Void] = state.withLock { s in
            s.now = s.now.advanced(by: duration)
            let now = s.now
            let ready = s.timers.filter { $0.value.0 <= now }.sorted { $0.key < $1.key }
            for (id, _) in ready { s.timers[id] = nil }
            return ready.map { $0.value.1 }
        }
        for work in due { queue.sync { work() } }
    }
}
