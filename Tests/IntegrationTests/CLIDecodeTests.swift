import Foundation
import Testing

/// `ble decode` of real captures (Fixtures/captures/real): the text output of
/// cnrd__yeelock.btsnoop equals the reviewed file Fixtures/cli/cnrd__yeelock.decode.txt, and
/// the JSON output agrees frame by frame with the fields Wireshark's dissectors extracted
/// (Fixtures/cli/*.tshark.tsv, see Fixtures/cli/README.md).
@Suite struct CLIDecodeTests {
    static let capture = BLETool.fixture("captures/real/cnrd__yeelock.btsnoop").path

    @Test func textMatchesTheReviewedOutput() async throws {
        let run = try await BLETool.run(["decode", Self.capture])
        #expect(run.status == 0)
        #expect(run.stderr.isEmpty)
        let expected = try String(contentsOf: BLETool.fixture("cli/cnrd__yeelock.decode.txt"), encoding: .utf8)
        let got = run.stdoutLines, want = expected.split(separator: "\n").map(String.init)
        #expect(got.count == want.count)
        for (i, (g, w)) in zip(got, want).enumerated() where g != w {
            Issue.record("line \(i + 1):\n  got  \(g)\n  want \(w)")
            break
        }
    }

    /// Both captures; the e-scooter one has ATT PDUs split over two to four ACL packets
    /// (frames 621-622, 733-736), which Wireshark and `ble decode` both show on the last one.
    @Test(arguments: [("cnrd__yeelock", 104), ("crossnite__NovaX-Escooter", nil as Int?)])
    func jsonAgreesWithWireshark(_ name: String, _ expectedATTFrames: Int?) async throws {
        let run = try await BLETool.run(["decode", "--json", BLETool.fixture("captures/real/\(name).btsnoop").path])
        #expect(run.status == 0)
        let ours = try BLETool.jsonLines(run)
        let tsv = try String(contentsOf: BLETool.fixture("cli/\(name).tshark.tsv"), encoding: .utf8)
        let rows = tsv.split(separator: "\n").dropFirst().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        #expect(ours.count == rows.count)
        func number(_ s: String) -> Int? { s.isEmpty ? nil : Int(s.dropFirst(2), radix: 16) }
        var attFrames = 0
        for (o, row) in zip(ours, rows) {
            let frame = Int(row[0])
            #expect(o["index"] as? Int == frame)
            #expect((o["direction"] as? String == "sent") == (row[1] == "0x00"), "frame \(row[0])")
            switch number(row[2]) {
            case 0x01:
                #expect(o["type"] as? String == "CMD")
                #expect(o["opcode"] as? Int == number(row[3]), "frame \(row[0])")
            case 0x04:
                #expect(o["type"] as? String == "EVT")
                #expect(o["event"] as? Int == number(row[4]), "frame \(row[0])")
            case 0x02:
                #expect(o["type"] as? String == "ACL")
                #expect(o["handle"] as? Int == number(row[5]), "frame \(row[0])")
                #expect(o["cid"] as? Int == number(row[6]), "frame \(row[0])")
                #expect(o["attOpcode"] as? Int == number(row[7]), "frame \(row[0])")
                if let op = number(row[7]) {
                    attFrames += 1
                    // Opcodes whose PDU names one attribute handle in both decoders.
                    if [0x01, 0x0A, 0x12, 0x52, 0x1B, 0x1D].contains(op) {
                        #expect(o["attHandle"] as? Int == number(row[8]), "frame \(row[0])")
                    }
                }
            default:
                Issue.record("frame \(row[0]): unexpected H4 type \(row[2])")
            }
        }
        #expect(attFrames > 0)
        if let expectedATTFrames { #expect(attFrames == expectedATTFrames) }
    }

    @Test func closedStdoutEndsTheTool() async throws {
        // 690 lines are more than a pipe buffer holds: the tool meets EPIPE once head exits.
        let run = try await Subprocess.run(URL(fileURLWithPath: "/bin/bash"), ["-c", "\"$0\" decode \"$1\" | head -1 >/dev/null; echo ${PIPESTATUS[0]}", BLETool.executable.path, Self.capture], killAfter: .seconds(60))
        #expect(run.status == 0)
        #expect(run.stdout == "141\n")
    }

    @Test func notACaptureIsARuntimeError() async throws {
        let run = try await BLETool.run(["decode", BLETool.fixture("cli/payloads/all-types.json").path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("is not a btsnoop capture"))
        #expect(run.stderrLines.count == 1)
    }
}
