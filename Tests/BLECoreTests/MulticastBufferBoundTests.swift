import Dispatch
import Synchronization
import Testing
import BLECore
import BLETestSupport

/// The bounds of a multicast buffer: the per-subscriber drop counter, the policy that ends a
/// stream whose consumer is too slow, and values that wait for room instead of being
/// dropped (the back-pressure of indications).
@Suite struct MulticastBufferBoundTests {
    let executor = AdapterExecutor(label: "multicast-bound-test")


    /// Counts the acceptances of `yield(_:whenAccepted:)`, on the adapter queue.
    final class Accepted: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
    }

    @Test func eachSubscriptionCountsItsOwnDrops() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        let (newest, all) = executor.onQueue { (buffer.subscribe(bufferingPolicy: .bufferingNewest(3)), buffer.subscribe()) }
        executor.onQueue { for i in 1...10 { buffer.yield(i) } }
        #expect(newest.droppedCount == 7)
        #expect(all.droppedCount == 0)
        #expect(executor.onQueue { buffer.droppedCount } == 7)
        var kept: [Int] = []
        for _ in 0..<3 { kept.append(try #require(try await newest.next())) }
        #expect(kept == [8, 9, 10])
    }

    @Test func endingWhenFullEndsTheStreamAfterTheQueuedValuesWithATypedError() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "notifications of handle 0x0012")
        let (slow, other) = executor.onQueue { (buffer.subscribe(bufferingPolicy: .endingWhenFull(4)), buffer.subscribe()) }
        executor.onQueue { for i in 1...6 { buffer.yield(i) } }
        // The slow subscriber left at the fifth value; the other one stays.
        #expect(executor.onQueue { buffer.subscriberCount } == 1)
        var got: [Int] = []
        do {
            while let v = try await slow.next() { got.append(v) }
            Issue.record("the stream should end with consumerTooSlow")
        } catch let error as StreamError {
            #expect(error == .consumerTooSlow(stream: "notifications of handle 0x0012", limit: 4))
            #expect("\(error)".contains("endingWhenFull(4)"))
        }
        #expect(got == [1, 2, 3, 4])
        var rest: [Int] = []
        for _ in 0..<6 { rest.append(try #require(try await other.next())) }
        #expect(rest == [1, 2, 3, 4, 5, 6])
    }

    @Test func aHeldValueIsAcceptedOnlyOnceTheFullSubscriberMakesRoom() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "indications")
        let (bounded, unbounded) = executor.onQueue { (buffer.subscribe(bufferingPolicy: .bufferingNewest(2)), buffer.subscribe()) }
        let accepted = Accepted()
        let accept: @Sendable () -> Void = { accepted.count.add(1, ordering: .relaxed) }
        executor.onQueue { for i in 1...3 { buffer.yield(i, whenAccepted: accept) } }
        // Two fitted; the third waits for the bounded subscriber (nothing was dropped).
        #expect(accepted.value == 2)
        #expect(bounded.droppedCount == 0)
        // Taking the batch [1, 2] makes room: the held value goes in and is accepted.
        #expect(try await bounded.next() == 1)
        #expect(accepted.value == 3)
        #expect(try await bounded.next() == 2)
        #expect(try await bounded.next() == 3)
        for expected in 1...3 { #expect(try await unbounded.next() == expected) }
    }

    @Test func aHeldValueIsAcceptedWhenItsSubscriberLeaves() async throws {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "indications")
        var bounded: MulticastSubscription<Int>? = executor.onQueue { buffer.subscribe(bufferingPolicy: .bufferingOldest(1)) }
        let accepted = Accepted()
        let accept: @Sendable () -> Void = { accepted.count.add(1, ordering: .relaxed) }
        executor.onQueue { buffer.yield(1, whenAccepted: accept); buffer.yield(2, whenAccepted: accept) }
        #expect(accepted.value == 1)
        #expect(bounded != nil)
        bounded = nil   // leaves on the adapter queue
        executor.onQueue {}
        #expect(accepted.value == 2)
        #expect(executor.onQueue { buffer.subscriberCount } == 0)
    }

    @Test func aBroadcasterStreamEndsWithConsumerTooSlowUnderEndingWhenFull() async throws {
        let states = Broadcaster<Int>(executor: executor)
        let (ending, plain) = executor.onQueue { (states.subscribeThrowing(bufferingPolicy: .endingWhenFull(2)), states.subscribe(bufferingPolicy: .endingWhenFull(2))) }
        executor.onQueue { for i in 1...3 { states.yield(i) } }
        #expect(executor.onQueue { states.subscriberCount } == 0)
        var got: [Int] = []
        do {
            for try await v in ending { got.append(v) }
            Issue.record("the stream should end with consumerTooSlow")
        } catch let error as StreamError {
            guard case .consumerTooSlow(_, let limit) = error else { return }
            #expect(limit == 2)
        }
        #expect(got == [1, 2])
        // A stream that cannot throw just ends after what it held.
        var plainGot: [Int] = []
        for await v in plain { plainGot.append(v) }
        #expect(plainGot == [1, 2])
    }

    @Test func withoutSubscribersAValueIsAcceptedAtOnce() {
        let buffer = MulticastBuffer<Int>(executor: executor, name: "indications")
        let accepted = Accepted()
        executor.onQueue { buffer.yield(1, whenAccepted: { accepted.count.add(1, ordering: .relaxed) }) }
        #expect(accepted.value == 1)
    }
}
