import Dispatch
import Synchronization
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// The controller side of a `MemoryTransport` pair for Central tests: answers every command
/// with Command Complete (status Success unless `reject` says otherwise, with the bring-up
/// return parameters of Vol 4, Part E, 7.3 and 7.4), records the commands, and lets the test
/// inject event bytes.
final class ScriptedController: @unchecked Sendable { // `commands`, `waiters` and the transport are touched only on `queue`
    let queue = DispatchQueue(label: "scripted-controller")
    let transport: MemoryTransport
    let extendedScanning: Bool
    /// A non-zero status to answer a command with (given the commands before it); nil answers Success.
    let reject: @Sendable (HCICommandPacket, _ earlier: [HCICommandPacket]) -> UInt8?
    private var commands: [HCICommandPacket] = []
    private var waiters: [(condition: @Sendable ([HCICommandPacket]) -> Bool, continuation: CheckedContinuation<[HCICommandPacket], Never>)] = []

    /// Public address the controller reports (Read BD_ADDR).
    static let address: [UInt8] = [0x01, 0x53, 0x00, 0x5E, 0x00, 0x00]

    init(transport: MemoryTransport, extendedScanning: Bool, reject: @escaping @Sendable (HCICommandPacket, [HCICommandPacket]) -> UInt8? = { _, _ in nil }) throws {
        self.transport = transport
        self.extendedScanning = extendedScanning
        self.reject = reject
        try transport.start(on: queue) { [self] event in
            guard case .packet(.command(let command)) = event else { return }
            answer(command)
            commands.append(command)
            check()
        }
    }

    private func answer(_ c: HCICommandPacket) {
        var rp: [UInt8] = [reject(c, commands) ?? 0x00]
        if rp[0] == 0 {
            switch c.opcode.rawValue {
            case 0x1001:
                // Read Local Version Information (7.4.1): HCI 5.2 (0x0B), subversion 0,
                // LMP 5.2, company 0xFFFF (reserved for testing), LMP subversion 0.
                rp += [0x0B, 0x00, 0x00, 0x0B, 0xFF, 0xFF, 0x00, 0x00]
            case 0x1002:
                rp += Self.supportedCommands(extended: extendedScanning)
            case 0x1003:
                // Read Local Supported Features (7.4.3): LMP bit 38 "LE Supported (Controller)".
                rp += [0, 0, 0, 0, 0x40, 0, 0, 0]
            case 0x2003:
                // LE Read Local Supported Features (7.8.3): bit 12 LE Extended Advertising.
                rp += [0, extendedScanning ? 0x10 : 0, 0, 0, 0, 0, 0, 0]
            case 0x2002:
                // LE Read Buffer Size [v1] (7.8.2): 251-octet packets, 8 of them.
                rp += [0xFB, 0x00, 0x08]
            case 0x1009:
                rp += Self.address
            default:
                break
            }
        }
        // Command Complete (7.7.14): Num_HCI_Command_Packets 1, opcode, return parameters.
        let params: [UInt8] = [0x01, UInt8(c.opcode.rawValue & 0xFF), UInt8(c.opcode.rawValue >> 8)] + rp
        try? transport.send(.event(HCIEventPacket(code: 0x0E, parameters: params)))
        if c.opcode.rawValue == 0x0406, rp[0] == 0, c.parameters.count == 3 {
            // Disconnect (7.1.6) done: Disconnection Complete (7.7.5) with Status 0, the handle
            // and the reason the host gave.
            try? transport.send(.event(HCIEventPacket(code: 0x05, parameters: [0x00] + c.parameters)))
        }
    }

    /// Supported_Commands (6.27): the bring-up and scan commands; the extended scan pair
    /// (octet 37 bits 5 and 6) when `extended`.
    static func supportedCommands(extended: Bool) -> [UInt8] {
        var o = [UInt8](repeating: 0, count: 64)
        o[0] |= 1 << 5                   // Disconnect
        o[5] |= 1 << 6 | 1 << 7          // Set Event Mask, Reset
        o[14] |= 1 << 3 | 1 << 5         // Read Local Version Information, Read Local Supported Features
        o[15] |= 1 << 1                  // Read BD_ADDR
        o[25] |= 1 << 0 | 1 << 1 | 1 << 2 // LE Set Event Mask, LE Read Buffer Size, LE Read Local Supported Features
        o[26] |= 1 << 2 | 1 << 3 | 1 << 4 // LE Set Scan Parameters, LE Set Scan Enable, LE Create Connection
        if extended { o[37] |= 1 << 5 | 1 << 6 }
        return o
    }

    /// Sends an HCI event packet to the host.
    func sendEvent(code: UInt8, _ parameters: [UInt8]) {
        queue.async { [self] in try? transport.send(.event(HCIEventPacket(code: code, parameters: parameters))) }
    }

    /// Returns once every packet sent so far has left the controller (it is then queued on
    /// the host's adapter queue).
    func flush() async { await withCheckedContinuation { c in queue.async { c.resume() } } }

    /// Sends an LE Meta event (0x3E) with these parameters (Subevent_Code first).
    func sendLEMeta(_ parameters: [UInt8]) { sendEvent(code: 0x3E, parameters) }

    /// Closes the controller's end: the host sees the transport lost.
    func close() { queue.async { [self] in transport.close() } }

    /// The commands recorded once `condition` holds, or whatever arrived after `timeout` seconds.
    func commands(timeout: Double = 5, until condition: @escaping @Sendable ([HCICommandPacket]) -> Bool) async -> [HCICommandPacket] {
        await withCheckedContinuation { continuation in
            queue.async { [self] in
                waiters.append((condition, continuation))
                check()
            }
            queue.asyncAfter(deadline: .now() + timeout) { [self] in
                let all = waiters
                waiters.removeAll()
                for w in all { w.continuation.resume(returning: commands) }
            }
        }
    }

    /// Scan commands only (LE Set [Extended] Scan Parameters / Enable), once `condition` holds.
    func scanCommands(timeout: Double = 5, until condition: @escaping @Sendable ([HCICommandPacket]) -> Bool) async -> [HCICommandPacket] {
        let all = await commands(timeout: timeout) { condition(Self.scanOnly($0)) }
        return Self.scanOnly(all)
    }

    /// Every command recorded so far (after all earlier work on the queue).
    func recorded() async -> [HCICommandPacket] { await commands(timeout: 5) { _ in true } }

    static func scanOnly(_ packets: [HCICommandPacket]) -> [HCICommandPacket] {
        packets.filter { [0x200B, 0x200C, 0x2041, 0x2042].contains($0.opcode.rawValue) }
    }

    private func check() {
        var remaining: [(condition: @Sendable ([HCICommandPacket]) -> Bool, continuation: CheckedContinuation<[HCICommandPacket], Never>)] = []
        for w in waiters {
            if w.condition(commands) { w.continuation.resume(returning: commands) } else { remaining.append(w) }
        }
        waiters = remaining
    }
}

/// A `TimerScheduler` whose `ManualScheduler` is created after the central (it needs the
/// central's adapter queue), so timers run on that queue as in production.
final class LateManualScheduler: TimerScheduler {
    private let inner = Mutex<ManualScheduler?>(nil)

    func bind(queue: DispatchQueue) { inner.withLock { $0 = ManualScheduler(queue: queue) } }
    var manual: ManualScheduler {
        guard let m = inner.withLock({ $0 }) else { preconditionFailure("bind(queue:) first") }
        return m
    }

    func now() -> ContinuousClock.Instant { manual.now() }
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        manual.schedule(after: delay, work)
    }
    func advance(by d: Duration) async { await manual.advance(by: d) }
}

/// A powered-on central over a scripted controller, with a manual clock.
struct ScanBed {
    let central: Central
    let controller: ScriptedController
    let clock: LateManualScheduler

    /// `poweredOn: false` leaves the central `.unknown`: the test calls `powerOn()`.
    static func make(extended: Bool = false, poweredOn: Bool = true, reject: @escaping @Sendable (HCICommandPacket, [HCICommandPacket]) -> UInt8? = { _, _ in nil }) async throws -> ScanBed {
        let (host, controllerEnd) = MemoryTransport.pair(name: "scan")
        let controller = try ScriptedController(transport: controllerEnd, extendedScanning: extended, reject: reject)
        let clock = LateManualScheduler()
        var options = Central.Options()
        options.scheduler = clock
        options.logger = .silent
        let central = Central(transport: host, options: options)
        clock.bind(queue: central.executor.queue)
        if poweredOn { try await central.powerOn() }
        return ScanBed(central: central, controller: controller, clock: clock)
    }

    /// Returns once the host has handled every event the controller sent before the call: the
    /// controller's queue sends it, then one turn of the adapter queue delivers it. A test
    /// calls this before it moves the manual clock past an event that must be handled first.
    func handled() async {
        await controller.flush()
        let adapter = central.executor.queue
        await withCheckedContinuation { c in adapter.async { c.resume() } }
    }
}
