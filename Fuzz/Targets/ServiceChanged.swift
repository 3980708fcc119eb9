import Dispatch
import Glibc
import Synchronization
import BLECore
import ATT
@testable import GATTClient
@testable import BLETestSupport
import BLEWire
import GATTServer

/// The GATT client's Service Changed handling and attribute cache (Vol 3, Part G, 7.1) against
/// a hostile server: a `Peripheral` over a `LoopbackATTChannel` discovers services,
/// characteristics and descriptors round after round while the server, before any answer,
/// may indicate Service Changed with any range (or a malformed value), and answers each
/// discovery request honestly (a `GATTServer` with the heart rate database), with made-up
/// entries, or with Attribute Not Found.
///
/// Input: one octet of choices (bit 0: a `GATTCache`; bit 1: ATT_MTU 23 instead of 517; bit 2:
/// a second app task discovering at the same time), then one record per request the server
/// receives: a selector octet (bits 0-1: 0-1 honest, 2 made-up entries, 3 Attribute Not
/// Found; bit 2: a Service Changed indication first, range from 4 octets; bit 3: a second
/// one; bit 4: the indication's value is not 4 octets), then what the record needs. Once the
/// input is used up every answer is honest and no indication is sent.
///
/// Property: no trap; after every step of the app and at the end, the client's database and
/// the cached snapshot are consistent (services in handle order without overlap;
/// characteristics, descriptors and included services only under known services and
/// characteristics and inside their ranges; at most one stale range), the cache holds one
/// peer, and once no store is pending it holds what the client knows.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(Array(UnsafeBufferPointer(start: data, count: size)))
    let choices = input.u8()
    let executor = AdapterExecutor(label: "fuzz-service-changed")
    let clock = ManualScheduler(queue: executor.queue)
    let inner = GATTServer(database: .heartRateMonitor(), queue: executor.queue)
    let server = HostileGATTServer(inner: inner, input: input, serviceChangedHandle: executor.queue.sync { inner.table.serviceChangedHandle } ?? 0)
    let channel = OwnedChannel(LoopbackATTChannel(server: server, executor: executor))
    let cache = choices & 1 != 0 ? GATTCache(executor: executor) : nil
    let peripheral = Peripheral(channel: channel, peer: ServiceChangedHarness.peer, cache: cache,
                                clientMTU: choices & 2 != 0 ? 23 : 517, scheduler: clock)

    let app = Task { await ServiceChangedHarness.script(peripheral, cache: cache, rounds: 4) }
    let second = choices & 4 != 0 ? Task { await ServiceChangedHarness.script(peripheral, cache: cache, rounds: 2) } : nil
    let appDone = DispatchSemaphore(value: 0)
    Task {
        await app.value
        await second?.value
        appDone.signal()
    }
    // Every ATT transaction has a 30 s timeout on the manual clock: moving it on ends them all.
    var appEnded = false
    for _ in 0..<40 where !appEnded {
        appEnded = appDone.wait(timeout: .now() + .milliseconds(50)) == .success
        if !appEnded { blocking { await clock.advance(by: .seconds(31)) } }
    }
    fuzzCheck(appEnded, "the app did not end after 20 minutes of virtual time")
    blocking {
        await ServiceChangedHarness.check(peripheral, cache: cache, "at the end")
        await channel.base.disconnect()
        await channel.endTasks()
        // Cancelled timers hold their work until their deadline passes.
        await clock.advance(by: .seconds(3600))
    }
    return 0
}

/// The loopback link with the harness as its owner, as a `Central` is for a real link: the
/// tasks the bearer and the peripheral start for the link (`adoptTask`) are cancelled and
/// awaited before the input ends, so none of them holds the run past it.
final class OwnedChannel: L2CAPChannel {
    let base: LoopbackATTChannel
    private let tasks = Mutex<[Task<Void, Never>]>([])

    init(_ base: LoopbackATTChannel) { self.base = base }

    var executor: AdapterExecutor { base.executor }
    var peerDescription: String { base.peerDescription }
    func send(_ sdu: [UInt8]) async throws(LinkError) { try await base.send(sdu) }
    func enqueue(_ sdu: [UInt8]) { _ = adoptTask { [base] in try? await base.send(sdu) } }
    func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        base.setHandlers(receive: receive, close: close)
    }

    func adoptTask(_ work: @escaping @Sendable () async -> Void) -> Bool {
        let task = Task { await work() }
        tasks.withLock { $0.append(task) }
        return true
    }

    /// Cancels the adopted tasks and waits for them, and for those they started meanwhile.
    func endTasks() async {
        while true {
            let pending = tasks.withLock { t in
                defer { t = [] }
                return t
            }
            if pending.isEmpty { return }
            for task in pending {
                task.cancel()
                await task.value
            }
        }
    }
}

enum ServiceChangedHarness {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xF0_5E_B1_00_00_02), type: .random)

    /// Discovers everything, `rounds` times; every step may fail (the server is hostile).
    static func script(_ p: Peripheral, cache: GATTCache?, rounds: Int) async {
        for round in 0..<rounds {
            if let services = try? await p.services() {
                for s in services.prefix(8) {
                    _ = try? await p.includedServices(of: ServiceIdentifier(uuid: s.uuid))
                    guard let chars = try? await p.characteristics(of: s) else { continue }
                    for c in chars.prefix(6) { _ = try? await p.descriptors(of: c) }
                    await check(p, cache: cache, "round \(round), after service \(s.handle.hex)")
                }
            }
            await check(p, cache: cache, "after round \(round)")
        }
    }

    static func check(_ p: Peripheral, cache: GATTCache?, _ when: String) async {
        let database = await p.database
        checkConsistent(database, "client database, \(when)")
        guard let cache else { return }
        let peers = await cache.peers.count
        fuzzCheck(peers <= 1, "the cache holds \(peers) peers for one, \(when)")
        guard let cached = await cache.snapshot(for: peer) else { return }
        checkConsistent(cached, "cached snapshot, \(when)")
        let storePending = await p.cacheStoreScheduled
        if !storePending, when == "at the end" {
            fuzzCheck(cached == database, "the cache differs from what the client knows, \(when)")
        }
    }

    static func checkConsistent(_ db: GATTDatabaseSnapshot, _ what: String) {
        let services = db.services ?? []
        for s in services {
            fuzzCheck(s.handle != 0 && s.handle <= s.endHandle, "\(what): service \(s.handle.hex)-\(s.endHandle.hex) is not a range")
        }
        for (a, b) in zip(services, services.dropFirst()) {
            fuzzCheck(a.endHandle < b.handle, "\(what): services \(a.range) and \(b.range) overlap or are out of order")
        }
        let byHandle = Dictionary(services.map { ($0.handle, $0) }, uniquingKeysWith: { a, _ in a })
        var valueHandles: [UInt16: GATTCharacteristic] = [:]
        for (handle, chars) in db.characteristics {
            guard let s = byHandle[handle] else {
                return fuzzCheck(false, "\(what): characteristics kept for \(handle.hex), which is no known service")
            }
            for c in chars {
                fuzzCheck(c.handle > s.handle && c.valueHandle > c.handle && c.valueHandle <= c.endHandle && c.endHandle <= s.endHandle,
                          "\(what): characteristic \(c.handle.hex) (value \(c.valueHandle.hex), end \(c.endHandle.hex)) is not inside service \(s.range)")
                valueHandles[c.valueHandle] = c
            }
        }
        for (valueHandle, descriptors) in db.descriptors {
            guard let c = valueHandles[valueHandle] else {
                return fuzzCheck(false, "\(what): descriptors kept for \(valueHandle.hex), which is no known characteristic value")
            }
            for d in descriptors {
                fuzzCheck(d.handle > c.valueHandle && d.handle <= c.endHandle, "\(what): descriptor \(d.handle.hex) is not inside characteristic \(c.valueHandle.hex)-\(c.endHandle.hex)")
            }
        }
        for handle in db.includedServices.keys {
            fuzzCheck(byHandle[handle] != nil, "\(what): included services kept for \(handle.hex), which is no known service")
        }
        fuzzCheck(db.staleRanges.count <= 1, "\(what): \(db.staleRanges.count) stale ranges")
    }
}

/// In front of an honest `GATTServer`: for each request, the input decides whether Service
/// Changed is indicated first and whether the answer is honest, made up or Attribute Not Found.
final class HostileGATTServer: SimulatedATTServer, @unchecked Sendable { // touched only on the executor's queue (the channel calls there)
    let inner: GATTServer
    var input: FuzzInput
    let serviceChangedHandle: UInt16

    init(inner: GATTServer, input: FuzzInput, serviceChangedHandle: UInt16) {
        self.inner = inner
        self.input = input
        self.serviceChangedHandle = serviceChangedHandle
    }

    func linkConnected(_ link: any ATTServerLink) { inner.linkConnected(link) }
    func linkDisconnected(_ link: any ATTServerLink) { inner.linkDisconnected(link) }

    func receive(_ bytes: [UInt8], from link: any ATTServerLink) {
        guard let pdu = try? ATTPDU(bytes: bytes), pdu.opcode.kind == .request, !input.isAtEnd else {
            return inner.receive(bytes, from: link)
        }
        let selector = input.u8()
        for n in 0..<2 where selector & (4 << n) != 0 {
            let value = selector & 0x10 != 0 ? input.take(Int(input.u8() % 8)) : input.take(4)
            link.sendToCentral(ATTPDU.handleValueIndication(handle: serviceChangedHandle, value: value).bytes)
        }
        switch selector & 3 {
        case 2:
            if let answer = madeUp(pdu) { return link.sendToCentral(answer.bytes) }
            inner.receive(bytes, from: link)
        case 3:
            link.sendToCentral(ATTPDU.errorResponse(request: pdu.opcode, handle: start(of: pdu), error: .attributeNotFound).bytes)
        default:
            inner.receive(bytes, from: link)
        }
    }

    private func start(of pdu: ATTPDU) -> UInt16 {
        switch pdu {
        case .readByGroupTypeRequest(let range, _), .readByTypeRequest(let range, _), .findInformationRequest(let range): return range.start
        default: return 0
        }
    }

    /// A response of the right kind with 1-4 entries near the requested range (inside it or not).
    private func madeUp(_ pdu: ATTPDU) -> ATTPDU? {
        let count = 1 + Int(input.u8() % 4)
        func handle(after base: UInt16) -> UInt16 { base &+ UInt16(input.u8() % 16) &- 2 }
        func uuid16() -> [UInt8] { [[0x00, 0x18], [0x01, 0x18], [0x0D, 0x18], [0x37, 0x2A], [0x02, 0x29], [0x05, 0x2A]][Int(input.u8() % 6)] }
        switch pdu {
        case .readByGroupTypeRequest(let range, _):
            var next = range.start
            var entries: [ATTGroupValue] = []
            for _ in 0..<count {
                let h = handle(after: next)
                let end = h &+ UInt16(input.u8())
                entries.append(ATTGroupValue(handle: h, endGroupHandle: end, value: uuid16()))
                next = end &+ 1
            }
            return .readByGroupTypeResponse(entries)
        case .readByTypeRequest(let range, let type) where type == GATTAttributeType.characteristic:
            var next = range.start
            var entries: [ATTHandleValue] = []
            for _ in 0..<count {
                let h = handle(after: next)
                let value = handle(after: h &+ 1)
                entries.append(ATTHandleValue(handle: h, value: [input.u8(), UInt8(value & 0xFF), UInt8(value >> 8)] + uuid16()))
                next = h &+ 2
            }
            return .readByTypeResponse(entries)
        case .readByTypeRequest(let range, _):
            let h = handle(after: range.start)
            let s = input.u16(), e = input.u16()
            return .readByTypeResponse([ATTHandleValue(handle: h, value: [UInt8(s & 0xFF), UInt8(s >> 8), UInt8(e & 0xFF), UInt8(e >> 8)] + uuid16())])
        case .findInformationRequest(let range):
            var next = range.start
            var entries: [ATTHandleUUID] = []
            for _ in 0..<count {
                let h = handle(after: next)
                let u = uuid16()
                entries.append(ATTHandleUUID(handle: h, uuid: BluetoothUUID(uuid16: UInt16(u[0]) | UInt16(u[1]) << 8)))
                next = h &+ 1
            }
            return .findInformationResponse(format: .uuid16, entries: entries)
        default:
            return nil
        }
    }
}
