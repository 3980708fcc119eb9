import Dispatch
import Testing
import BLECore
@testable import BLETransport

/// State confined to a queue is reached from that queue, from queues that target it, and from
/// an actor whose executor is that queue (the debug check passes in all three).
@Suite("Queue-confined state")
struct QueueConfinedTests {
    actor Counter {
        let executor: AdapterExecutor
        let state: QueueConfined<Int>
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        init(executor: AdapterExecutor) {
            self.executor = executor
            self.state = QueueConfined(0, on: executor.queue)
        }
        func add(_ n: Int) -> Int {
            state.value += n
            return state.value
        }
    }

    @Test("Writes on the queue, on a queue targeting it and in its actor all land in one value")
    func reachableFromItsQueueFamily() async {
        let executor = AdapterExecutor(label: "confined")
        let queue = executor.queue
        let child = DispatchQueue(label: "confined.child", target: queue)
        let state = QueueConfined([UInt8](), on: queue)
        queue.sync { state.value.append(1) }
        child.sync { state.value.append(2) }
        let counter = Counter(executor: executor)
        #expect(await counter.add(3) == 3)
        #expect(await counter.add(4) == 7)
        #expect(queue.sync { state.value } == [1, 2])
    }
}
