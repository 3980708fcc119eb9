import Dispatch
import ATT
import BLETestSupport
import BLECore
import BLEWire

/// An in-memory L2CAP channel: records the SDUs the bearer sends and lets a test inject
/// inbound SDUs and a close, all on the executor's queue as a real channel would.
final class FakeChannel: L2CAPChannel, @unchecked Sendable { // mutable state is only touched on executor.queue
    let executor = AdapterExecutor(label: "att-test")
    let peerDescription = "F0:F1:F2:F3:F4:F5"

    private var sent: [[UInt8]] = []
    private var sentWaiters: [(count: Int, continuation: CheckedContinuation<[[UInt8]], Never>)] = []
    private var receiveHandler: (@Sendable ([UInt8]) -> Void)?
    private var sliceHandler: (@Sendable (ArraySlice<UInt8>) -> Void)?
    private var closeHandler: (@Sendable (LinkError) -> Void)?
    private var sendError: LinkError?
    private var limits: [Int] = []
    private var refusedHandler: (@Sendable ([UInt8], Int) -> Void)?

    func send(_ sdu: [UInt8]) async throws(LinkError) {
        let failure: LinkError? = await executor.hop {
            if let e = self.sendError { return e }
            self.sent.append(sdu)
            self.wakeSentWaiters()
            return nil
        }
        if let failure { throw failure }
    }

    func setHandlers(receive: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        receiveHandler = receive
        closeHandler = close
    }

    func setSliceHandlers(receive: @escaping @Sendable (ArraySlice<UInt8>) -> Void, close: @escaping @Sendable (LinkError) -> Void) {
        sliceHandler = receive
        closeHandler = close
    }

    /// Delivers `sdu` to the bearer on the queue.
    func inject(_ sdu: [UInt8]) async {
        await executor.hop {
            if let slice = self.sliceHandler { slice(sdu[...]) } else { self.receiveHandler?(sdu) }
        }
    }

    /// Delivers `sdu` as a view into a larger buffer that holds `header` first (as the host
    /// hands over an SDU inside the ACL payload, after the L2CAP basic header).
    func inject(_ sdu: [UInt8], after header: [UInt8]) async {
        let buffer = header + sdu
        await executor.hop { self.sliceHandler?(buffer[header.count...]) }
    }

    func limitInboundSDUs(to maximum: Int, refused: @escaping @Sendable ([UInt8], Int) -> Void) {
        limits.append(maximum)
        refusedHandler = refused
    }

    /// Every bound the bearer set with `limitInboundSDUs`, in order.
    func inboundLimits() async -> [Int] { await executor.hop { self.limits } }

    /// Refuses an SDU of `size` bytes whose first fragment carried `head`, as a host whose
    /// reassembly stops at the bound does.
    func refuse(head: [UInt8], size: Int) async { await executor.hop { self.refusedHandler?(head, size) } }

    /// Closes the channel under the bearer.
    func close(_ error: LinkError) async { await executor.hop { self.closeHandler?(error) } }

    /// Makes every later send fail with `error` (nil: succeed again).
    func failSends(with error: LinkError?) async { await executor.hop { self.sendError = error } }

    /// What was sent so far.
    func sentSDUs() async -> [[UInt8]] { await executor.hop { self.sent } }

    /// Number of SDUs sent, read from the queue itself (for handlers running there).
    var sentCountOnQueue: Int { sent.count }

    /// Waits until at least `count` SDUs were sent and returns them all.
    func waitForSent(count: Int) async -> [[UInt8]] {
        await withCheckedContinuation { c in
            executor.queue.async {
                self.sentWaiters.append((count, c))
                self.wakeSentWaiters()
            }
        }
    }

    private func wakeSentWaiters() {
        let ready = sentWaiters.filter { $0.count <= sent.count }
        sentWaiters.removeAll { $0.count <= sent.count }
        for w in ready { w.continuation.resume(returning: sent) }
    }
}

extension ATTBearer {
    /// Starts one task per request from inside the bearer's isolation, so they enter the
    /// request queue in this order.
    func spawn(_ pdus: [ATTPDU]) -> [Task<Result<ATTPDU, ATTError>, Never>] {
        pdus.map { pdu in
            Task {
                do throws(ATTError) { return .success(try await self.request(pdu)) } catch { return .failure(error) }
            }
        }
    }

    /// Returns once every job enqueued on the bearer's executor before it has run.
    func sync() {}
}

extension FakeChannel {
    /// A fake channel, a manual scheduler on its queue, and a bearer over both: the bed of the
    /// bearer suites.
    ///
    ///     init() { (channel, scheduler, bearer) = FakeChannel.bearerBed() }
    static func bearerBed() -> (FakeChannel, ManualScheduler, ATTBearer) {
        let channel = FakeChannel()
        let scheduler = ManualScheduler(queue: channel.executor.queue)
        return (channel, scheduler, ATTBearer(channel: channel, scheduler: scheduler))
    }
}
