import Synchronization
import Testing
import BLECore
import BLETestSupport
import BLEWire

/// A start of advertising whose task is cancelled while its commands are under way leaves
/// nothing advertising: LE Set Advertising Enable (Vol 4, Part E, 7.8.9) or LE Set Extended
/// Advertising Enable (7.8.56) off again for what was enabled, LE Remove Advertising Set
/// (7.8.59) for an extended set; `.cancelled` is thrown. The task is cancelled from the virtual
/// controller as the command arrives, so the cancel falls between two commands. `close()`
/// called from a cancelled task (an app's Ctrl-C) still disables its sets.
@Suite(.timeLimit(.minutes(1)))
struct AdvertisingStartCancellationTests {
    typealias Start = Task<AdvertisingSet, any Error>

    /// Command Complete (7.7.14) for `c`: one credit, the opcode, status success.
    static func complete(_ c: HCICommandPacket) -> [HCIEventPacket] {
        [HCIEventPacket(code: 0x0E, parameters: [0x01, UInt8(c.opcode.rawValue & 0xFF), UInt8(c.opcode.rawValue >> 8), 0x00])]
    }

    /// Starts advertising in a task that `opcode`'s arrival at the controller cancels (the
    /// command itself completes); returns how the start ended.
    static func start(_ central: Central, _ vc: VirtualController, cancelledAt opcode: UInt16,
                      _ parameters: AdvertisingParameters = AdvertisingParameters()) async -> Result<AdvertisingSet, any Error> {
        let task = Mutex<Start?>(nil)
        vc.answer(HCIOpcode(rawValue: opcode), with: .events({ c in
            task.withLock { $0?.cancel() }
            return complete(c)
        }), times: 1)
        let (go, release) = AsyncStream.makeStream(of: Void.self)
        let start = Start {
            for await _ in go { break }
            return try await central.startAdvertising(PeripheralRoleTests.data, parameters: parameters)
        }
        task.withLock { $0 = start }
        release.yield()
        return await start.result
    }

    static func isCancelled(_ result: Result<AdvertisingSet, any Error>) -> Bool {
        if case .failure(let error) = result, let e = error as? AdvertisingError { return e == .cancelled }
        return false
    }

    @Test func aLegacySetCancelledDuringItsEnableIsDisabledAgain() async throws {
        let (vc, central) = try await VC.stack()
        let result = await Self.start(central, vc, cancelledAt: 0x200A)
        #expect(Self.isCancelled(result), "\(result)")
        let disable = try await vc.waitForCommand(HCIOpcode(rawValue: 0x200A), count: 2)
        #expect(disable.parameters == [0x00])
        #expect(PeripheralRoleTests.advertisingCommands(vc).map(\.opcode.rawValue) == [0x2006, 0x2008, 0x2009, 0x200A, 0x200A])
        #expect(vc.advertisingSets.first?.isEnabled == false)
        #expect(await central.advertisingSets.isEmpty)
    }

    @Test func aLegacySetCancelledBeforeItsEnableSendsNoEnable() async throws {
        let (vc, central) = try await VC.stack()
        let result = await Self.start(central, vc, cancelledAt: 0x2008)
        #expect(Self.isCancelled(result), "\(result)")
        #expect(!PeripheralRoleTests.advertisingCommands(vc).contains { $0.opcode.rawValue == 0x200A })
        #expect(vc.advertisingSets.first?.isEnabled != true)
        // Nothing is left reserved: the next start advertises.
        let set = try await central.startAdvertising(PeripheralRoleTests.data)
        #expect(set.handle == 0)
        #expect(vc.advertisingSets.first?.isEnabled == true)
    }

    @Test func anExtendedSetCancelledDuringItsEnableIsDisabledAndRemoved() async throws {
        let (vc, central) = try await PeripheralRoleTests.extendedStack()
        let result = await Self.start(central, vc, cancelledAt: 0x2039)
        #expect(Self.isCancelled(result), "\(result)")
        _ = try await vc.waitForCommand(HCIOpcode(rawValue: 0x203C))
        let tail = PeripheralRoleTests.advertisingCommands(vc).filter { [0x2039, 0x203C].contains($0.opcode.rawValue) }
        // Enable, then disable set 0 (Enable, Num_Sets, handle, Duration, Max events), then remove it.
        #expect(tail.map(\.parameters) == [[0x01, 0x01, 0x00, 0x00, 0x00, 0x00], [0x00, 0x01, 0x00, 0x00, 0x00, 0x00], [0x00]])
        #expect(vc.advertisingSets.isEmpty)
        #expect(await central.advertisingSets.isEmpty)
    }

    @Test func anExtendedSetCancelledAfterItsParametersIsRemovedWithoutAnEnable() async throws {
        let (vc, central) = try await PeripheralRoleTests.extendedStack()
        let result = await Self.start(central, vc, cancelledAt: 0x2037, AdvertisingParameters(kind: .nonConnectable, format: .extended))
        #expect(Self.isCancelled(result), "\(result)")
        let remove = try await vc.waitForCommand(HCIOpcode(rawValue: 0x203C))
        #expect(remove.parameters == [0x00])
        #expect(!PeripheralRoleTests.advertisingCommands(vc).contains { $0.opcode.rawValue == 0x2039 })
        #expect(vc.advertisingSets.isEmpty)
    }

    @Test func closeFromACancelledTaskStillStopsTheSets() async throws {
        let (vc, central) = try await VC.stack()
        _ = try await central.startAdvertising(PeripheralRoleTests.data)
        let (go, release) = AsyncStream.makeStream(of: Void.self)
        let close = Task {
            for await _ in go { break }
            await central.close()
        }
        close.cancel()
        release.yield()
        await close.value
        let enables = PeripheralRoleTests.advertisingCommands(vc).filter { $0.opcode.rawValue == 0x200A }
        #expect(enables.map(\.parameters) == [[0x01], [0x00]])
    }
}
