import BLETestSupport
import Foundation
import GATTClient
import Testing
import BLEWire
import BLECore
import ATT

/// The `ble` executable against fakes of the scenario peers (see `FakeRadio`): scanning,
/// inspecting, reading, writing, notifications, indications, connecting and reconnecting,
/// with the values the test sends and expects written here.
@Suite(.serialized, .timeLimit(.minutes(2))) struct CLIFakeRadioTests {
    static let lab = "F0:5E:B1:00:00:02"
    static let scratch = "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"

    @Test func scanJSONFindsTheDevices() async throws {
        let radio = FakeRadio([FakePeers.heartRateMonitor(), FakePeers.lab(), FakePeers.battery()])
        defer { radio.close() }
        let run = try await radio.run(["scan", "--json", "--duration", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        let events = try BLETool.jsonLines(run)
        #expect(Set(events.compactMap { $0["address"] as? String }) == ["F0:5E:B1:00:00:01", Self.lab, "F0:5E:B1:00:00:03"])
        #expect(events.allSatisfy { ["discovered", "updated", "lost"].contains($0["event"] as? String ?? "") })
        // The lab fake advertises its 128-bit service and its name.
        let lab = try #require(events.last { $0["address"] as? String == Self.lab })
        #expect(lab["name"] as? String == "Lab sim")
        #expect((lab["services"] as? [String])?.map(CLIRadioTests.normalized) == ["6E400001-B5A3-F393-E0A9-E50E24DCCA9E"])
        #expect(lab["rssi"] as? Int == -50)

        let filtered = try await radio.run(["scan", "--json", "--duration", "1", "--service", "180F"])
        let addresses = Set(try BLETool.jsonLines(filtered).compactMap { $0["address"] as? String })
        #expect(addresses == ["F0:5E:B1:00:00:03"])
    }

    @Test func scanLinesFiltersAndPassiveMode() async throws {
        let radio = FakeRadio([FakePeers.heartRateMonitor(), FakePeers.lab(), FakePeers.battery()])
        defer { radio.close() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("scan-\(UUID().uuidString).btsnoop")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await radio.run(["--btsnoop", file.path, "scan", "--passive", "--name", "lab", "--duration=1"])
        #expect(run.status == 0, "\(run.stderr)")
        // Piped without --json: one line per new or changed device, only the one named like "lab".
        #expect(run.stdoutLines.first?.hasPrefix("discovered  \(Self.lab)/random  -50 dBm") == true, "\(run.stdout)")
        #expect(!run.stdoutLines.isEmpty && run.stdoutLines.allSatisfy { $0.contains("\(Self.lab)/random") && $0.contains("\"Lab sim\"") })
        // The controller was asked for a passive scan (LE_Scan_Type 0x00, Vol 4, Part E, 7.8.10).
        let decoded = try await BLETool.run(["decode", file.path])
        #expect(decoded.stdout.contains("< CMD HCI_LE_Set_Scan_Parameters (0x200B) plen 7: passive"))
        #expect(decoded.stdout.contains("< CMD HCI_LE_Set_Scan_Enable (0x200C) plen 2: enable"))
    }

    @Test func inspectReadShowsValuesAndTypedDecoding() async throws {
        let radio = FakeRadio([FakePeers.heartRateMonitor()])
        defer { radio.close() }
        let run = try await radio.run(["inspect", "F0:5E:B1:00:00:01", "--read"])
        #expect(run.status == 0, "\(run.stderr)")
        // Body Sensor Location 0x01 is "Chest" (Heart Rate Service 1.0, 3.2.1).
        #expect(run.stdout.contains("2A38 - Body Sensor Location  [read] = 0x01 (1 byte, uint 1) -> Chest"), "\(run.stdout)")
        #expect(run.stdout.contains("Service 180D - Heart Rate"))
        #expect(run.stdout.contains("Descriptor 2902 - Client Characteristic Configuration"))
        // A string value shows as hex ("Virtual Sensors" in ASCII) and as text.
        #expect(run.stdout.contains("2A29 - Manufacturer Name String  [read] = 0x5669727475616C2053656E736F7273 (15 bytes, \"Virtual Sensors\")"), "\(run.stdout)")
    }

    /// Heart Rate Measurement, flags 0x00: an 8-bit value follows (Heart Rate Service 1.0, 3.1).
    static func measurement(_ bpm: UInt8) -> [UInt8] { [0x00, bpm] }

    @Test func notifyPrintsEachHeartRateAndWriteAwaitsTheReply() async throws {
        let hrm = FakePeers.heartRateMonitor()
        let radio = FakeRadio([hrm])
        defer { radio.close() }
        let bpms: [UInt8] = [60, 72, 90, 120, 150]
        let json = try radio.launch(["read", "F0:5E:B1:00:00:01", "-c", "2A37", "--notify", "--count", "5", "--json"])
        try await hrm.waitForSubscriber(to: FakePeers.measurement, timeout: .seconds(30))
        for bpm in bpms { #expect(try await hrm.simulateNotification(Self.measurement(bpm), for: FakePeers.measurement) == 1) }
        let run = try await json.value
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try BLETool.jsonLines(run)
        #expect(lines.compactMap { $0["hex"] as? String } == bpms.map { "00" + String(format: "%02x", $0) })
        #expect(lines.compactMap { ($0["decoded"] as? String)?.split(separator: " ").first.flatMap { Int($0) } } == bpms.map(Int.init))
        #expect(lines.allSatisfy { $0["time"] is String && $0["characteristic"] as? String == "2A37" })

        let text = try radio.launch(["read", "F0:5E:B1:00:00:01", "-c", "2A37", "--notify", "-n2"])
        try await hrm.waitForSubscriber(to: FakePeers.measurement, timeout: .seconds(30))
        for bpm: UInt8 in [61, 62] { try await hrm.simulateNotification(Self.measurement(bpm), for: FakePeers.measurement) }
        let textRun = try await text.value
        #expect(textRun.status == 0, "\(textRun.stderr)")
        #expect(textRun.stdoutLines.count == 2)
        #expect(zip(textRun.stdoutLines, ["61 bpm", "62 bpm"]).allSatisfy { $0.contains($1) }, "\(textRun.stdout)")

        // The Heart Rate Control Point (0x01: reset Energy Expended, Heart Rate Service 1.0,
        // 3.3) answers an accepted write with a measurement, notified after the Write Response.
        try await hrm.answerWrites(to: FakePeers.controlPoint) { value in
            guard value == [0x01] else { return ATTErrorCode(0x80) }
            Task { try await hrm.simulateNotification(Self.measurement(80), for: FakePeers.measurement) }
            return nil
        }
        let reply = try await radio.run(["write", "F0:5E:B1:00:00:01", "-c", "2A39", "-x01", "--expect-reply-on", "2A37", "--json"])
        #expect(reply.status == 0, "\(reply.stderr)")
        let answer = try #require(try BLETool.jsonLines(reply).first)
        #expect(answer["characteristic"] as? String == "2A37")
        #expect(answer["hex"] as? String == "0050")
        #expect((answer["decoded"] as? String)?.hasPrefix("80 bpm") == true, "\(answer)")
        #expect(try await hrm.writes(to: FakePeers.controlPoint) == [[0x01]])
    }

    @Test func writeThenReadBack() async throws {
        let lab = FakePeers.lab()
        let radio = FakeRadio([lab])
        defer { radio.close() }
        let scratchID = CharacteristicIdentifier(uuid: "6E400003-B5A3-F393-E0A9-E50E24DCCA9E", service: FakePeers.labService)
        // (arguments, bytes expected back). Payload bytes by hand from the field rules:
        // all-types.json and .yaml: u8 1 | u16le 513 = 01 02 | u32le 5 | i16le -2 = FE FF | "hi" | 0A 0B | 3 x 00.
        // big-endian.json: u16be 513 = 02 01 | i32be -2 = FF FF FF FE | u24le 0x123456 |
        // i8 -128 = 80 | "é😀" in UTF-8 = C3 A9 F0 9F 98 80.
        let cases: [([String], String)] = [
            (["--hex", "01 02 03 04"], "01020304"),
            (["--string", "hello"], "68656c6c6f"),
            (["--file", BLETool.fixture("cli/payloads/all-types.json").path], "01" + "0102" + "05000000" + "feff" + "6869" + "0a0b" + "000000"),
            (["--file", BLETool.fixture("cli/payloads/all-types.yaml").path], "01" + "0102" + "05000000" + "feff" + "6869" + "0a0b" + "000000"),
            (["--file", BLETool.fixture("cli/payloads/big-endian.json").path], "0201" + "fffffffe" + "563412" + "80" + "c3a9f09f9880"),
            (["--hex", "cafe", "--without-response"], "cafe"),
        ]
        for (args, expected) in cases {
            let w = try await radio.run(["write", Self.lab, "-c", Self.scratch] + args)
            #expect(w.status == 0, "\(args): \(w.stderr)")
            let r = try await radio.run(["read", Self.lab, "-s", "6E400001-B5A3-F393-E0A9-E50E24DCCA9E", "-c", Self.scratch, "--json"])
            #expect(r.status == 0, "\(r.stderr)")
            let value = try #require(try BLETool.jsonLines(r).first)
            #expect(value["hex"] as? String == expected, "\(args)")
            #expect(try await lab.writes(to: scratchID).last.map { $0.map { String(format: "%02x", $0) }.joined() } == expected, "\(args)")
        }
        #expect(try await lab.writes(to: scratchID).count == cases.count)
    }

    @Test func indicationsStreamAndWrongModeIsRefused() async throws {
        let lab = FakePeers.lab()
        let radio = FakeRadio([lab])
        defer { radio.close() }
        let counter = "6E400004-B5A3-F393-E0A9-E50E24DCCA9E"   // indicate-only counter, lab.json
        let run = try radio.launch(["read", Self.lab, "-c", counter, "--indicate", "--count", "3", "--json"])
        try await lab.waitForSubscriber(to: FakePeers.labCounter, timeout: .seconds(30))
        for n: UInt8 in 1...3 {
            // Each indication waits for its Handle Value Confirmation (Vol 3, Part F, 3.4.7.3).
            #expect(try await lab.simulateIndication([n, 0, 0, 0], for: FakePeers.labCounter) == 1)
        }
        let result = try await run.value
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try BLETool.jsonLines(result).compactMap { $0["hex"] as? String } == ["01000000", "02000000", "03000000"])

        let wrong = try await radio.run(["read", Self.lab, "-c", counter, "--notify", "-n", "1"])
        #expect(wrong.status == 1)
        #expect(wrong.stderrLines.last?.contains("does not support notifications") == true, "\(wrong.stderr)")
        #expect(wrong.stderrLines.last?.contains("use --indicate") == true)
    }

    @Test func missingCharacteristicAndAbsentDeviceAreOneLineFailures() async throws {
        let radio = FakeRadio([FakePeers.lab()])
        defer { radio.close() }
        let run = try await radio.run(["read", Self.lab, "-c", "2A37"])
        #expect(run.status == 1)
        let last = try #require(run.stderrLines.last)
        #expect(last.hasPrefix("ble: the device has no characteristic Heart Rate Measurement (2A37)"), "\(run.stderr)")

        // Nobody advertises this address: the connect attempt times out after --timeout.
        let absent = try await radio.run(["--timeout", "1", "connect", "F0:5E:B1:00:00:99"])
        #expect(absent.status == 1)
        #expect(absent.stderrLines.last?.hasPrefix("ble: no connection to F0:5E:B1:00:00:99") == true, "\(absent.stderr)")
    }

    @Test func btsnoopTeeRecordsTheSession() async throws {
        let radio = FakeRadio([])
        defer { radio.close() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("session-\(UUID().uuidString).btsnoop")
        defer { try? FileManager.default.removeItem(at: file) }
        let info = try await radio.run(["--btsnoop", file.path, "info", "--json"])
        #expect(info.status == 0, "\(info.stderr)")
        let json = try #require(try BLETool.jsonLines(info).first)
        #expect(json["address"] as? String == "00:1B:DC:0F:00:01")   // FakeCentral's default controller address
        let decoded = try await BLETool.run(["decode", file.path])
        #expect(decoded.status == 0)
        #expect(decoded.stdoutLines.first?.contains("< CMD HCI_Reset (0x0C03)") == true)
        #expect(decoded.stdout.contains("> EVT Command Complete: HCI_Read_BD_ADDR (0x1009) status Success (0x00)"))
    }

    @Test func connectHoldsTheLinkUntilInterrupted() async throws {
        let lab = FakePeers.lab()
        let radio = FakeRadio([lab])
        defer { radio.close() }
        let run = try await radio.interrupt(["connect", "Lab sim"]) { $0.contains("connected (handle") }
        #expect(run.status == 130)
        #expect(run.stdout.contains("connecting (attempt 1)"))
        #expect(run.stdout.contains("connected (handle"))
        #expect(run.stderr.contains("disconnected"), "\(run.stderr)")
        // The tool ended the link on its way out (HCI_Disconnect, Vol 4, Part E, 7.1.6).
        try await radio.fake.controller.waitUntil("the link to end", timeout: .seconds(10)) { $0.connections.isEmpty }
        #expect(radio.fake.controller.commandsReceived.contains { $0.opcode == HCICommand.Disconnect.opcode })
        #expect(!radio.fake.isConnected(lab))
    }

    @Test func connectReconnectsAfterADrop() async throws {
        let dropper = FakePeripheral(name: "Dropper sim", address: FakePeers.address("F0:5E:B1:00:00:11"))
        let radio = FakeRadio([dropper])
        defer { radio.close() }
        // The peer ends the first link (Remote User Terminated Connection, 0x13) once it is up.
        var dropped = false
        let run = try await radio.interrupt(["connect", "F0:5E:B1:00:00:11", "--reconnect", "3", "--json"]) { text in
            if !dropped && text.contains("connected (handle") {
                dropped = true
                #expect(throws: Never.self) { try radio.fake.simulateDisconnect(dropper, reason: .remoteUserTerminatedConnection) }
            }
            return text.components(separatedBy: "connected (handle").count > 2
        }
        #expect(run.status == 130)
        let events = try BLETool.jsonLines(run).compactMap { $0["event"] as? String }
        #expect(events.first == "connecting (attempt 1)")
        #expect(events.contains { $0.hasPrefix("disconnected: Remote User Terminated Connection (0x13), will reconnect") }, "\(events)")
        #expect(events.contains { $0.hasPrefix("reconnecting: attempt 1") }, "\(events)")
        #expect(events.filter { $0.hasPrefix("connected (handle") }.count == 2)
    }
}
