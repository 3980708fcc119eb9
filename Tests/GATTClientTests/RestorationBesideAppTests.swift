import Testing
import Glibc
import BLECore
import BLETestSupport
@testable import GATTClient
import GATTServer
import BLEWire

/// `Restoration.restore()` and an app's own `Central.connect(whenSeen:)` on one central: both
/// sets share the Filter Accept List, the app's call does not end the restore, and ending the
/// app's set leaves the restore running.
@Suite(.timeLimit(.minutes(1))) struct RestorationBesideAppTests {
    static let appDevice = LEAddress(BluetoothAddress(rawValue: 0xC0_00_00_00_00_09), type: .random)

    @Test func anAppsBackgroundSetRunsBesideRestore() async throws {
        let root = try TemporaryDirectory.make("restoration")
        defer { TemporaryDirectory.remove(root) }
        let first = try await RestorationTests.Run(root: root)
        first.appear()
        let link = try await first.restoration.connect(RestorationTests.peer, reconnect: .always(maxAttempts: 3))
        _ = try await first.restoration.subscribe(RestorationTests.batteryLevel, on: link)
        try await first.cache.flush()
        await first.central.close()

        let second = try await RestorationTests.Run(root: root)
        var events = try await second.restoration.restore().makeAsyncIterator()
        let create = HCIOpcode(rawValue: 0x200D)
        _ = try await second.vc.waitForCommand(create)
        #expect(second.vc.filterAcceptList == [RestorationTests.peer])

        // The app's own set: the list holds both sets' devices (by address, the app's first).
        let appStream = await second.central.connect(whenSeen: [Self.appDevice])
        let (seen, seenOutput) = AsyncStream.makeStream(of: Connection.self)
        let appSet = Task {
            do { for try await link in appStream { seenOutput.yield(link) } } catch {}
            seenOutput.finish()
        }
        try await second.vc.waitUntil("both sets on the list") { $0.filterAcceptList == [Self.appDevice, RestorationTests.peer] }
        second.vc.addPeripheral(SimulatedPeripheral(address: Self.appDevice, advertisingData: [0x02, 0x01, 0x06]))
        var appLinks = seen.makeAsyncIterator()
        let appLink = try #require(await appLinks.next())
        #expect(appLink.peer == Self.appDevice)

        // The app's set ends; the restore goes on: the stored device still comes back, with
        // its notifications.
        appSet.cancel()
        await appSet.value
        try await second.vc.waitUntil("the restore's device alone on the list") { $0.filterAcceptList == [RestorationTests.peer] }
        second.appear()
        guard let back = try await RestorationTests.nextRestored(&events) else { return }
        #expect(back.peer == RestorationTests.peer)
        let values = try #require(back.streams[RestorationTests.batteryLevel])
        #expect(await second.server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x33]) == 1)
        var it = values.makeAsyncIterator()
        #expect(try await it.next() == [0x33])
        #expect(await appLink.isConnected)
        await second.central.close()
    }
}
