import BLETestSupport
import Foundation
import Testing

/// The `ble` executable against the Bumble virtual radio (Fixtures/peers/scenarios): each
/// test starts a radio and runs the tool with `-d tcp:127.0.0.1:PORT`.
@Suite(.serialized) struct CLIRadioTests {
    /// "2901" and the 128-bit form of SIG UUIDs compare equal.
    static func normalized(_ uuid: String) -> String {
        let u = uuid.uppercased()
        if u.count == 4 { return "0000\(u)-0000-1000-8000-00805F9B34FB" }
        if u.count == 8 { return "\(u)-0000-1000-8000-00805F9B34FB" }
        return u
    }

    @Test func scanJSONFindsTheScenarioDevices() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let run = try await BLETool.run(["-d", radio.transportSpec, "scan", "--json", "--duration", "3"])
            #expect(run.status == 0, "\(run.stderr)")
            let events = try BLETool.jsonLines(run)
            let seen = Set(events.compactMap { $0["address"] as? String })
            for device in radio.devices { #expect(seen.contains(device.address), "\(device.name) not found") }
            #expect(events.allSatisfy { ["discovered", "updated", "lost"].contains($0["event"] as? String ?? "") })
            // The lab device advertises its service and its name (scenario lab.json).
            let lab = try #require(events.last { $0["address"] as? String == "F0:5E:B1:00:00:02" })
            #expect(lab["name"] as? String == "Lab sim")
            #expect((lab["services"] as? [String])?.map(Self.normalized) == ["6E400001-B5A3-F393-E0A9-E50E24DCCA9E"])

            let filtered = try await BLETool.run(["-d", radio.transportSpec, "scan", "--json", "--duration", "2", "--service", "180F"])
            let addresses = Set(try BLETool.jsonLines(filtered).compactMap { $0["address"] as? String })
            #expect(addresses == ["F0:5E:B1:00:00:03"])
        }
    }

    @Test func scanLinesFiltersAndPassiveMode() async throws {
        try await VirtualRadio.with(scenario: "all") { radio in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("scan-\(UUID().uuidString).btsnoop")
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try await BLETool.run(["-d", radio.transportSpec, "--btsnoop", file.path, "scan", "--passive",
                                             "--name", "lab", "--duration=2"])
            #expect(run.status == 0, "\(run.stderr)")
            // Piped without --json: one line per new or changed device, only the one named like "lab".
            #expect(run.stdoutLines.first?.hasPrefix("discovered  F0:5E:B1:00:00:02/random  -") == true, "\(run.stdout)")
            #expect(run.stdoutLines.allSatisfy { $0.contains("F0:5E:B1:00:00:02/random") && $0.contains("\"Lab sim\"") })
            // The controller was asked for a passive scan (LE_Scan_Type 0x00, Vol 4, Part E, 7.8.10).
            let decoded = try await BLETool.run(["decode", file.path])
            #expect(decoded.stdout.contains("< CMD HCI_LE_Set_Scan_Parameters (0x200B) plen 7: passive"))
            #expect(decoded.stdout.contains("< CMD HCI_LE_Set_Scan_Enable (0x200C) plen 2: enable"))
        }
    }

    @Test func inspectJSONMatchesTheLabScenario() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let lab = try #require(radio.device("lab"))
            let run = try await BLETool.run(["-d", radio.transportSpec, "inspect", lab.address, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let tree = try #require(try BLETool.jsonLines(run).first)
            let services = try #require(tree["services"] as? [[String: Any]])

            let scenarioData = try Data(contentsOf: BLETool.fixture("peers/scenarios/lab.json"))
            let scenario = try #require(try JSONSerialization.jsonObject(with: scenarioData) as? [String: Any])
            let device = try #require((scenario["devices"] as? [[String: Any]])?.first)
            let expected = try #require(device["services"] as? [[String: Any]])
            for es in expected {
                let uuid = Self.normalized(es["uuid"] as? String ?? "")
                let got = try #require(services.first { Self.normalized($0["uuid"] as? String ?? "") == uuid }, "service \(uuid)")
                let gotChars = try #require(got["characteristics"] as? [[String: Any]])
                let wantChars = try #require(es["characteristics"] as? [[String: Any]])
                #expect(gotChars.count == wantChars.count)
                for (g, w) in zip(gotChars, wantChars) {
                    #expect(Self.normalized(g["uuid"] as? String ?? "") == Self.normalized(w["uuid"] as? String ?? ""))
                    #expect(Set(g["properties"] as? [String] ?? []) == Set(w["properties"] as? [String] ?? []), "\(w["uuid"] ?? "")")
                    let gotDescriptors = Set((g["descriptors"] as? [[String: Any]] ?? []).compactMap { ($0["uuid"] as? String).map(Self.normalized) })
                    for d in w["descriptors"] as? [[String: Any]] ?? [] {
                        #expect(gotDescriptors.contains(Self.normalized(d["uuid"] as? String ?? "")))
                    }
                }
            }
        }
    }

    @Test func inspectReadShowsValuesAndTypedDecoding() async throws {
        try await VirtualRadio.with(scenario: "heart-rate") { radio in
            let hrm = try #require(radio.device("hrm"))
            let run = try await BLETool.run(["-d", radio.transportSpec, "inspect", hrm.address, "--read"])
            #expect(run.status == 0, "\(run.stderr)")
            // Body Sensor Location 0x01 is "Chest" (Heart Rate Service 1.0, 3.2.1).
            #expect(run.stdout.contains("2A38 - Body Sensor Location  [read] = 0x01 (1 byte, uint 1) -> Chest"))
            #expect(run.stdout.contains("Service 180D - Heart Rate"))
            #expect(run.stdout.contains("Descriptor 2902 - Client Characteristic Configuration"))
        }
    }

    @Test func notifyPrintsFiveChangingHeartRates() async throws {
        try await VirtualRadio.with(scenario: "heart-rate") { radio in
            let hrm = try #require(radio.device("hrm"))
            let run = try await BLETool.run(["-d", radio.transportSpec, "read", hrm.address, "-c", "2A37", "--notify", "--count", "5", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let lines = try BLETool.jsonLines(run)
            #expect(lines.count == 5)
            let bpm = lines.compactMap { ($0["decoded"] as? String)?.split(separator: " ").first.flatMap { Int($0) } }
            #expect(bpm.count == 5)
            #expect(Set(bpm).count > 1, "values do not change: \(bpm)")
            #expect(lines.allSatisfy { $0["time"] is String && $0["characteristic"] as? String == "2A37" })

            let text = try await BLETool.run(["-d", radio.transportSpec, "read", hrm.address, "-c", "2A37", "--notify", "-n2"])
            #expect(text.stdoutLines.count == 2)
            #expect(text.stdoutLines.allSatisfy { $0.contains(" bpm") })

            // Write the Heart Rate Control Point (0x01: reset Energy Expended, Heart Rate
            // Service 1.0, 3.3) and print the next measurement notified.
            let reply = try await BLETool.run(["-d", radio.transportSpec, "write", hrm.address, "-c", "2A39", "-x01",
                                               "--expect-reply-on", "2A37", "--json"])
            #expect(reply.status == 0, "\(reply.stderr)")
            let answer = try #require(try BLETool.jsonLines(reply).first)
            #expect(answer["characteristic"] as? String == "2A37")
            #expect((answer["decoded"] as? String)?.contains(" bpm") == true)
        }
    }

    @Test func writeThenReadBack() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let lab = try #require(radio.device("lab")).address
            let scratch = "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"
            let d = ["-d", radio.transportSpec]
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
                let w = try await BLETool.run(d + ["write", lab, "-c", scratch] + args)
                #expect(w.status == 0, "\(args): \(w.stderr)")
                let r = try await BLETool.run(d + ["read", lab, "-s", "6E400001-B5A3-F393-E0A9-E50E24DCCA9E", "-c", scratch, "--json"])
                #expect(r.status == 0, "\(r.stderr)")
                let value = try #require(try BLETool.jsonLines(r).first)
                #expect(value["hex"] as? String == expected, "\(args)")
            }
        }
    }

    @Test func indicationsStreamAndWrongModeIsRefused() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let lab = try #require(radio.device("lab")).address
            let counter = "6E400004-B5A3-F393-E0A9-E50E24DCCA9E"   // indicate-only counter, lab.json
            let run = try await BLETool.run(["-d", radio.transportSpec, "read", lab, "-c", counter, "--indicate", "--count", "3", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let values = try BLETool.jsonLines(run).compactMap { $0["hex"] as? String }
            #expect(values.count == 3)
            #expect(Set(values).count == 3, "the counter does not count: \(values)")

            let wrong = try await BLETool.run(["-d", radio.transportSpec, "read", lab, "-c", counter, "--notify", "-n", "1"])
            #expect(wrong.status == 1)
            #expect(wrong.stderrLines.last?.contains("does not support notifications") == true)
            #expect(wrong.stderrLines.last?.contains("use --indicate") == true)
        }
    }

    @Test func missingCharacteristicIsOneLineFailure() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let lab = try #require(radio.device("lab")).address
            let run = try await BLETool.run(["-d", radio.transportSpec, "read", lab, "-c", "2A37"])
            #expect(run.status == 1)
            let last = try #require(run.stderrLines.last)
            #expect(last.hasPrefix("ble: the device has no characteristic Heart Rate Measurement (2A37)"))

            // 6E400005 needs an encrypted link (scenario lab.json: permissions readEncrypted):
            // the device refuses the read, the tool pairs on the spot (Just Works), keeps the
            // bond in the bond directory and reads again.
            let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("ble-bonds-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: bonds) }
            let encrypted = try await BLETool.run(["-d", radio.transportSpec, "--bond-dir", bonds.path, "read", lab, "-c", "6E400005-B5A3-F393-E0A9-E50E24DCCA9E"])
            #expect(encrypted.status == 0, "\(encrypted.stderr)")
            #expect(!encrypted.stdout.isEmpty)
            let stored = FileManager.default.enumerator(atPath: bonds.path)?.compactMap { $0 as? String } ?? []
            #expect(stored.contains { $0.hasSuffix("\(lab)-random") }, "\(stored)")

            // Nobody advertises this address: the connect attempt times out after --timeout.
            let absent = try await BLETool.run(["-d", radio.transportSpec, "--timeout", "1", "connect", "F0:5E:B1:00:00:99"])
            #expect(absent.status == 1)
            #expect(absent.stderrLines.last?.hasPrefix("ble: no connection to F0:5E:B1:00:00:99") == true)
        }
    }

    @Test func btsnoopTeeRecordsTheSession() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("session-\(UUID().uuidString).btsnoop")
            defer { try? FileManager.default.removeItem(at: file) }
            let info = try await BLETool.run(["-d", radio.transportSpec, "--btsnoop", file.path, "info", "--json"])
            #expect(info.status == 0, "\(info.stderr)")
            let json = try #require(try BLETool.jsonLines(info).first)
            #expect(json["address"] as? String == radio.hostAddress)
            let decoded = try await BLETool.run(["decode", file.path])
            #expect(decoded.status == 0)
            #expect(decoded.stdoutLines.first?.contains("< CMD HCI_Reset (0x0C03)") == true)
            #expect(decoded.stdout.contains("> EVT Command Complete: HCI_Read_BD_ADDR (0x1009) status Success (0x00)"))
        }
    }

    @Test func connectHoldsTheLinkUntilInterrupted() async throws {
        try await VirtualRadio.with(scenario: "lab") { radio in
            let run = try await BLETool.interrupt(["-d", radio.transportSpec, "connect", "Lab sim"]) {
                $0.contains("connected (handle")
            }
            #expect(run.status == 130)
            #expect(run.stdout.contains("connecting (attempt 1)"))
            #expect(run.stdout.contains("connected (handle"))
            #expect(run.stderr.contains("disconnected"), "\(run.stderr)")
        }
    }

    @Test func connectReconnectsAfterADrop() async throws {
        // "Dropper sim" ends every link 3 s after it is made (scenario flaky.json).
        try await VirtualRadio.with(scenario: "flaky") { radio in
            let dropper = try #require(radio.device("dropper")).address
            let run = try await BLETool.interrupt(["-d", radio.transportSpec, "connect", dropper, "--reconnect", "3", "--json"]) {
                $0.components(separatedBy: "connected (handle").count > 2
            }
            #expect(run.status == 130)
            let events = try BLETool.jsonLines(run).compactMap { $0["event"] as? String }
            #expect(events.first == "connecting (attempt 1)")
            #expect(events.contains { $0.hasPrefix("disconnected: Remote User Terminated Connection (0x13), will reconnect") }, "\(events)")
            #expect(events.contains { $0.hasPrefix("reconnecting: attempt 1") }, "\(events)")
            #expect(events.filter { $0.hasPrefix("connected (handle") }.count == 2)
        }
    }
}
