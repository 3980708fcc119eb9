import Testing
import BLETestSupport
import GATTClient
import BLESeed

/// `FakePeripheral.simulateNotification` never drops a value because the app's subscription
/// has not landed: it waits for the Client Characteristic Configuration write, and fails
/// with `FakeError.timedOut` naming the characteristic when none comes.
@Suite struct FakeNotificationWaitTests {
    static let level = FakeCentralTests.level

    /// The app subscribes in the background and the test notifies at once, without
    /// `waitForSubscriber`: the value (Battery Level 42 %, one octet 0x2A) still arrives.
    @Test(.timeLimit(.minutes(1)))
    func aNotificationSentBeforeTheSubscriptionLandsIsDelivered() async throws {
        let (fake, central) = try await FakeCentralTests.rig()
        let battery = FakeCentralTests.batteryPeripheral()
        fake.add(battery)
        let peripheral = try await central.connect(battery.identifier)
        let first = Task { () -> [UInt8]? in
            for try await value in try await peripheral.subscribe(to: Self.level) { return value }
            return nil
        }
        #expect(try await battery.simulateNotification(BatteryLevel(percent: 42), for: Self.level) == 1)
        #expect(try await value(of: first) == [0x2A])
        await central.close()
    }

    /// Nobody subscribes: the call fails after `subscriberTimeout` and says what it waited for.
    @Test(.timeLimit(.minutes(1)))
    func aNotificationWithoutSubscriberFailsAndSaysWhy() async throws {
        let (fake, central) = try await FakeCentralTests.rig()
        let battery = FakeCentralTests.batteryPeripheral()
        fake.add(battery)
        _ = try await central.connect(battery.identifier)
        do {
            try await battery.simulateNotification(BatteryLevel(percent: 1), for: Self.level, subscriberTimeout: .milliseconds(200))
            Issue.record("a notification without a subscriber was sent")
        } catch {
            guard case .timedOut(let what, _) = error else { Issue.record("unexpected \(error)"); return }
            #expect(what == "a central to subscribe to \(Self.level)")
            #expect("\(error)".hasPrefix("waited for a central to subscribe to"))
        }
        await central.close()
    }
}
