import Testing
import Synchronization
@testable import BLECore
@testable import BLETransport
import BLETestSupport
import BLEWire

/// The library is silent unless the application asks, and its log records carry the fields of
/// swift-log's handler.
@Suite(.timeLimit(.minutes(1)))
struct LoggingTests {
    @Test func everyDefaultLoggerIsSilent() {
        #expect(Central.Options().logger.isSilent)
        #expect(BLELogger.silent.isSilent)
        #expect(!BLELogger.silent.isEnabled(.critical))
        let executor = AdapterExecutor(label: "log-test")
        let buffer = MulticastBuffer<Int>(executor: executor, name: "test")
        // The buffer's state belongs to the adapter queue.
        #expect(executor.onQueue { buffer.logger.isSilent })
    }

    @Test func aRecordCarriesLevelMessageMetadataAndSource() {
        let records = Mutex<[BLELogRecord]>([])
        let logger = BLELogger(label: "app", minimumLevel: .info, metadata: ["adapter": "hci0"]) { r in records.withLock { $0.append(r) } }
            .with("peer", "F0:F1:F2:F3:F4:F5")
        logger.log(.debug, "below the level")
        logger.log(.notice, "link up", metadata: ["handle": UInt16(0x40).hex])
        let all = records.withLock { $0 }
        #expect(all.count == 1)
        let r = try! #require(all.first)
        #expect(r.level == .notice && r.message == "link up" && r.label == "app")
        #expect(r.metadata == ["adapter": "hci0", "peer": "F0:F1:F2:F3:F4:F5", "handle": "0x0040"])
        #expect(r.source == "BLECoreTests" && r.file.hasSuffix("LoggingTests.swift") && r.line > 0)
        #expect(r.formatted == "app[notice]: link up adapter=hci0 handle=0x0040 peer=F0:F1:F2:F3:F4:F5")
    }

    @Test func levelsHaveSwiftLogsNames() {
        #expect(LogLevel.allCases.map(\.description) == ["trace", "debug", "info", "notice", "warning", "error", "critical"])
        #expect(LogLevel(name: "DEBUG") == .debug)
        #expect(LogLevel(name: "loud") == nil)
    }

    @Test func oneFormatForHandlesAndOpcodes() {
        #expect(UInt16(0x40).hex == "0x0040")
        #expect(UInt8(0x1B).hex == "0x1B")
        #expect(HCIOpcode(rawValue: 0x2032).description == "HCI_LE_Set_PHY (0x2032)")
    }

    /// Bumble never answers LE Set PHY; the virtual controller is told to do the same. The
    /// connection works, and the command timeout is a debug record, not a warning.
    @Test func anUnansweredOptionalCommandIsNotAWarning() async throws {
        let (records, sink) = AsyncStream<BLELogRecord>.makeStream()
        let (vc, central) = try await VC.stack(central: { o in
            o.logger = BLELogger(minimumLevel: .trace) { sink.yield($0) }
        })
        let setPHY = HCIOpcode(rawValue: 0x2032)
        vc.answer(setPHY, with: .none)
        let link = try await central.connect(VC.peer)
        _ = try await vc.waitForCommand(setPHY)
        await vc.advance(by: .seconds(3))
        var seen: [BLELogRecord] = []
        for await r in records {
            seen.append(r)
            if r.message.contains("timed out") { break }
        }
        let timeout = try #require(seen.last)
        #expect(timeout.message.hasPrefix("HCI_LE_Set_PHY (0x2032) timed out after"))
        #expect(timeout.level < .warning)
        #expect(timeout.metadata["opcode"] == "0x2032")
        #expect(seen.allSatisfy { $0.level < .warning })
        #expect(await link.isConnected)
    }
}
