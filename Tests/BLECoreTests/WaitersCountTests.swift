import BLECore
import BLETestSupport
import Testing

/// `waitForCount`: a test learns that callers parked from the waiters' own changes.
@Suite struct WaitersCountTests {
    typealias Owner = WaitersTests.Owner

    @Test func endsWhenTheCountIsReachedAndWhenItFallsAgain() async throws {
        let owner = Owner()
        let waiters = owner.waiters
        try await waiters.waitForCount("no caller") { $0 == 0 } // holds at once
        // One at a time, so the oldest waiter is `first` (two tasks started together may
        // reach the owner in either order).
        let first = Task { await owner.wait() }
        try await waiters.waitForCount("one caller parked") { $0 == 1 }
        let second = Task { await owner.wait() }
        try await waiters.waitForCount("two callers parked") { $0 == 2 }
        #expect(await owner.count == 2)
        #expect(await owner.resumeFirst(.success(1)))
        try await waiters.waitForCount("one caller left") { $0 == 1 }
        #expect(await first.value == .success(1))
        await owner.failAll("done")
        try await waiters.waitForCount("none left") { $0 == 0 }
        #expect(await second.value == .failure(.init(why: "done")))
    }

    @Test func aCancelledCallerCountsAsAChange() async throws {
        let owner = Owner()
        let waiters = owner.waiters
        let caller = Task { await owner.wait() }
        try await waiters.waitForCount("the caller parked") { $0 == 1 }
        caller.cancel()
        try await waiters.waitForCount("the cancelled caller gone") { $0 == 0 }
        #expect(await caller.value == .failure(.init(why: "cancelled")))
    }

    @Test func aCountNeverReachedFailsWithATimeoutNamingIt() async {
        let owner = Owner()
        let waiters = owner.waiters
        let caller = Task { await owner.wait() }
        await #expect(throws: WaitersCountError.timeout(waitingFor: "three callers", milliseconds: 50, lastCount: 1)) {
            try await waiters.waitForCount("the caller parked") { $0 == 1 }
            try await waiters.waitForCount("three callers", timeout: .milliseconds(50)) { $0 == 3 }
        }
        await owner.failAll("done")
        _ = await caller.value
    }

    @Test func theWaitEndsWhenItsTaskIsCancelled() async throws {
        let owner = Owner()
        let waiters = owner.waiters
        let wait = Task { try await waiters.waitForCount("a caller that never comes", timeout: .seconds(60)) { $0 == 1 } }
        wait.cancel()
        guard case .failure(let error)? = await outcome(of: wait, within: 5) else {
            Issue.record("the cancelled wait did not end with an error within 5 s")
            return
        }
        #expect(error as? WaitersCountError == .cancelled(waitingFor: "a caller that never comes"))
        // The observer it left is gone once the count changes, and counting still works.
        let caller = Task { await owner.wait() }
        try await waiters.waitForCount("the caller parked") { $0 == 1 }
        await owner.failAll("done")
        _ = await caller.value
    }
}
