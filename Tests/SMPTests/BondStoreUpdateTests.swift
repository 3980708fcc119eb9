import Testing
import Dispatch
import BLECore
@testable import SMP
import BLEWire
import BLETestSupport

/// `BondStore.update`: one read-change-save step, so two writers of one bond (the signed-write
/// verifier's counter and the GATT server's CCCDs) keep both their changes.
struct BondStoreUpdateTests {
    /// Both stores the package ships, each fresh with `BondStoreTests.bond` in it.
    static func stores(_ root: String) throws -> [any BondStore] {
        let file = try FileBondStore(adapter: BondStoreTests.adapter, directory: root + "/bonds")
        try file.save(BondStoreTests.bond)
        return [file, MemoryBondStore([BondStoreTests.bond])]
    }

    @Test func updateSavesOnlyWhatTheChangeAccepts() throws {
        try TemporaryDirectory.with("bonds") { root in
            for store in try Self.stores(root) {
                // Found by its identity address; the change is saved under the address it was stored with.
                #expect(try store.update(BondStoreTests.bond.identityAddress!) { $0.peerSignCounter = 5; return true })
                #expect(store.bond(for: BondStoreTests.peer)?.peerSignCounter == 5)
                // A change that says no leaves the bond as it was.
                #expect(try !store.update(BondStoreTests.peer) { $0.peerSignCounter = 9; return false })
                #expect(store.bond(for: BondStoreTests.peer)?.peerSignCounter == 5)
                // No bond: nothing saved, the change is not called.
                let stranger = LEAddress(BluetoothAddress("C4:00:00:00:00:99")!, type: .random)
                #expect(try !store.update(stranger) { _ in Issue.record("called without a bond"); return true })
                #expect(store.bond(for: stranger) == nil)
            }
        }
    }

    @Test func concurrentWritersOfDifferentFieldsKeepBothChanges() throws {
        try TemporaryDirectory.with("bonds") { root in
            for store in try Self.stores(root) {
                // 200 counter updates and 200 CCCD updates of one bond at once from two threads.
                DispatchQueue.concurrentPerform(iterations: 2) { writer in
                    for i in 1...200 {
                        _ = try? store.update(BondStoreTests.peer) { bond in
                            if writer == 0 { bond.peerSignCounter = UInt32(i) } else { bond.clientConfigurations = [UInt16(i): 0x0001] }
                            return true
                        }
                    }
                }
                let bond = try #require(store.bond(for: BondStoreTests.peer))
                #expect(bond.peerSignCounter == 200)
                #expect(bond.clientConfigurations == [200: 0x0001])
            }
        }
    }
}
