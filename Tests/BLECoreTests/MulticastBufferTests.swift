import Dispatch
import Synchronization
import Testing
import BLECore
import BLETestSupport
import BLETransport

/// The notification multicast buffer: order, fan-out, buffering policies and their drop
/// counts, termination, subscribers leaving and cancellation. Producer calls run on the
/// adapter queue (`queue.sync`), as the stack makes them.
@Suite struct MulticastBufferTests {
    struct Ended: Error, Equatable { let code: Int }

    let executor = AdapterExecutor(label: "multicast-test")


    /// Reads `count` values (or fewer when the subscription ends) from `s`.
    func collect(_ s: MulticastSubscription<Int>, count: Int) async throws -> [Int] {
        var out: [Int] = []
        while out.count < count, let v = try await s.next() { out.append(v) }
        return out
    }

    @Test func oneSubscriberGetsEveryValueInOrderAcrossBatches() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let s = executor.onQueue { buffer.subscribe() }
        let consumer = Task { try await collect(s, count: 5000) }
        // Fifty queue jobs of 100 values: the consumer takes them in batches of any size.
        for job in 0..<50 {
            executor.queue.async { for i in 0..<100 { buffer.yield(job * 100 + i) } }
        }
        #expect(try await consumer.value == Array(0..<5000))
        #expect(executor.onQueue { buffer.droppedCount } == 0)
    }

    @Test func everySubscriberGetsEveryValue() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let subs = executor.onQueue { (0..<16).map { _ in buffer.subscribe() } }
        #expect(executor.onQueue { buffer.subscriberCount } == 16)
        let consumers = subs.map { s in Task { try await collect(s, count: 1000) } }
        for job in 0..<10 {
            executor.queue.async { for i in 0..<100 { buffer.yield(job * 100 + i) } }
        }
        for c in consumers { #expect(try await c.value == Array(0..<1000)) }
    }

    @Test func finishCurrentEndsTodaysSubscribersAndAcceptsNewOnes() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let first = executor.onQueue { buffer.subscribe() }
        executor.onQueue { buffer.yield(1); buffer.finishCurrent(throwing: Ended(code: 8)) }
        #expect(try await first.next() == 1)
        await #expect(throws: Ended(code: 8)) { try await first.next() }
        #expect(executor.onQueue { buffer.subscriberCount } == 0)
        #expect(executor.onQueue { buffer.isFinished } == false)
        let second = executor.onQueue { buffer.subscribe() }
        executor.onQueue { buffer.yield(2); buffer.finish() }
        #expect(try await collect(second, count: 10) == [2])
    }

    @Test func bufferingOldestKeepsTheFirstValuesAndCountsTheDrops() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test", logger: .silent)
        let s = executor.onQueue { buffer.subscribe(bufferingPolicy: .bufferingOldest(3)) }
        executor.onQueue { for i in 0..<10 { buffer.yield(i) } }
        #expect(executor.onQueue { buffer.droppedCount } == 7)
        executor.onQueue { buffer.finish() }
        #expect(try await collect(s, count: 100) == [0, 1, 2])
    }

    @Test func bufferingNewestKeepsTheLatestValuesAndCountsTheDrops() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test", logger: .silent)
        let s = executor.onQueue { buffer.subscribe(bufferingPolicy: .bufferingNewest(3)) }
        // More than the compaction threshold, so the dropped head is reclaimed on the way.
        executor.onQueue { for i in 0..<100 { buffer.yield(i) } }
        #expect(executor.onQueue { buffer.droppedCount } == 97)
        executor.onQueue { buffer.finish() }
        #expect(try await collect(s, count: 100) == [97, 98, 99])
    }

    @Test func policiesApplyPerSubscriber() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test", logger: .silent)
        let (all, latest) = executor.onQueue { (buffer.subscribe(), buffer.subscribe(bufferingPolicy: .bufferingNewest(1))) }
        executor.onQueue { for i in 0..<5 { buffer.yield(i) } ; buffer.finish() }
        #expect(try await collect(all, count: 10) == [0, 1, 2, 3, 4])
        #expect(try await collect(latest, count: 10) == [4])
        #expect(executor.onQueue { buffer.droppedCount } == 4)
    }

    @Test func dropsAreLogged() async throws {
        let lines = Mutex<[String]>([])
        let logger = BLELogger(minimumLevel: .warning) { record in lines.withLock { $0.append(record.message) } }
        let buffer = MulticastBuffer<Int>(executor: executor, name: "notifications of handle 0x0012", logger: logger)
        let s = executor.onQueue { buffer.subscribe(bufferingPolicy: .bufferingOldest(1)) }
        executor.onQueue { for i in 0..<12 { buffer.yield(i) } }
        // The 1st and 10th drops are logged, naming the stream and the policy.
        let logged = lines.withLock { $0 }
        #expect(logged.count == 2)
        #expect(logged.allSatisfy { $0.contains("notifications of handle 0x0012") && $0.contains("bufferingOldest(1)") })
        withExtendedLifetime(s) {}
    }

    @Test func finishDeliversQueuedValuesThenThrows() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let s = executor.onQueue { buffer.subscribe() }
        executor.onQueue { buffer.yield(1); buffer.yield(2); buffer.finish(throwing: Ended(code: 7)) }
        #expect(try await s.next() == 1)
        #expect(try await s.next() == 2)
        await #expect(throws: Ended(code: 7)) { _ = try await s.next() }
        #expect(executor.onQueue { buffer.subscriberCount } == 0)
    }

    @Test func finishEndsAWaitingConsumer() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let s = executor.onQueue { buffer.subscribe() }
        // Whether the consumer is already waiting or not when finish runs, it must throw.
        let consumer = Task { () -> Ended? in
            do { _ = try await s.next(); return nil } catch let e as Ended { return e } catch { return nil }
        }
        executor.onQueue { buffer.finish(throwing: Ended(code: 3)) }
        #expect(await consumer.value == Ended(code: 3))
    }

    @Test func aLateSubscriberGetsAnEndedSubscription() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        executor.onQueue { buffer.finish() }
        let s = executor.onQueue { buffer.subscribe() }
        #expect(executor.onQueue { buffer.subscriberCount } == 0)
        #expect(try await s.next() == nil)
    }

    @Test func aSubscriberLeavingMidStreamDoesNotDisturbTheOthers() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let counts = Mutex<[Int]>([])
        let (stays, leaves) = executor.onQueue {
            buffer.onSubscriberCountChange = { n in counts.withLock { $0.append(n) } }
            return (buffer.subscribe(), buffer.subscribe())
        }
        executor.onQueue { for i in 0..<3 { buffer.yield(i) } }
        let leaver = Task { [leaves] in try await collect(leaves, count: 2) }
        #expect(try await leaver.value == [0, 1])
        // The leaving subscriber is dropped here (its task ended); removal is queued.
        _ = consume leaves
        await waitForSubscriberCount(buffer, 1)
        executor.onQueue { for i in 3..<6 { buffer.yield(i) } }
        #expect(try await collect(stays, count: 6) == Array(0..<6))
        #expect(counts.withLock { $0 } == [1, 2, 1])
    }

    @Test func cancellingAWaitingConsumerEndsItsIterationAndUnsubscribes() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let s = executor.onQueue { buffer.subscribe() }
        let consumer = Task { try await s.next() }
        consumer.cancel()
        #expect(try await consumer.value == nil)
        await waitForSubscriberCount(buffer, 0)
        // Values yielded afterwards go nowhere and the iteration stays ended.
        executor.onQueue { buffer.yield(1) }
        #expect(try await s.next() == nil)
    }

    @Test func theStreamFormIteratesLikeAnAsyncThrowingStream() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let stream = executor.onQueue { buffer.subscribe().stream() }
        executor.onQueue { for i in 0..<4 { buffer.yield(i) }; buffer.finish(throwing: Ended(code: 1)) }
        var got: [Int] = []
        do {
            for try await v in stream { got.append(v) }
            Issue.record("the stream should throw")
        } catch let e as Ended {
            #expect(e == Ended(code: 1))
        }
        #expect(got == [0, 1, 2, 3])
    }

    /// Waits for the buffer to report `count` subscribers through `onSubscriberCountChange`
    /// (removals are queued onto the adapter queue); fails after 5 s without that event.
    func waitForSubscriberCount(_ buffer: MulticastBuffer<Int>, _ count: Int) async {
        let queue = executor.queue
        let reached = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            queue.async {
                if buffer.subscriberCount == count { return c.resume(returning: true) }
                let once = Mutex<CheckedContinuation<Bool, Never>?>(c)
                buffer.onSubscriberCountChange = { n in
                    if n == count { once.withLock { $0.take() }?.resume(returning: true) }
                }
                queue.asyncAfter(deadline: .now() + 5) { once.withLock { $0.take() }?.resume(returning: false) }
            }
        }
        #expect(reached, "the buffer never reported \(count) subscriber(s)")
    }
}
