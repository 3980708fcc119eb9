import Foundation
import Testing

/// `ble decode --json` carries the decoded fields of HCI events, not only their summary text:
/// for both real captures, every field Wireshark's HCI dissector extracted
/// (Fixtures/cli/*.tshark-hci.tsv, see Fixtures/cli/README.md) equals ours, frame by frame,
/// wherever our JSON has that field for that event.
@Suite struct CLIDecodeHCIFieldsTests {
    @Test(arguments: ["cnrd__yeelock", "crossnite__NovaX-Escooter"])
    func hciFieldsAgreeWithWireshark(_ name: String) async throws {
        let run = try await BLETool.run(["decode", "--json", BLETool.fixture("captures/real/\(name).btsnoop").path])
        #expect(run.status == 0)
        let ours = try BLETool.jsonLines(run)
        let tsv = try String(contentsOf: BLETool.fixture("cli/\(name).tshark-hci.tsv"), encoding: .utf8)
        let lines = tsv.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = try #require(lines.first)
        let rows = lines.dropFirst()
        #expect(ours.count == rows.count)
        func number(_ s: String) -> Int? { s.hasPrefix("0x") ? Int(s.dropFirst(2), radix: 16) : Int(s) }
        var compared: [String: Int] = [:]
        for (o, cells) in zip(ours, rows) where o["type"] as? String == "EVT" {
            let frame = cells[0]
            let row = Dictionary(uniqueKeysWithValues: zip(header, cells))
            let report = (o["reports"] as? [[String: Any]])?.first
            let completed = (o["completed"] as? [[String: Any]])?.first
            // (tshark column, our value, tshark's value in our unit)
            let pairs: [(String, Any?, (String) -> AnyHashable?)] = [
                ("status", o["status"], { number($0) }),
                ("handle", o["handle"] ?? completed?["handle"], { number($0) }),
                ("reason", o["reason"], { number($0) }),
                ("role", o["role"], { number($0).map { $0 == 0 ? "central" : "peripheral" } }),
                ("bd_addr", o["peer"] ?? report?["address"], { $0.uppercased() }),
                ("peer_address_type", o["peerAddressType"] ?? report?["addressType"], { number($0) }),
                ("rssi", report?["rssi"], { Int($0) }),
                ("interval", o["intervalMs"], { number($0).map { Double($0) * 1.25 } }),
                ("latency", o["latency"], { number($0) }),
                ("supervision_timeout", o["supervisionTimeoutMs"], { number($0).map { $0 * 10 } }),
                ("ncmd", o["ncmd"], { number($0) }),
                ("completed", completed?["count"], { number($0) }),
                ("version", o["version"], { number($0) }),
                ("company", o["company"], { number($0) }),
                ("subversion", o["subversion"], { number($0) }),
                ("name", report?["name"], { $0 }),
            ]
            for (column, value, theirs) in pairs {
                guard let cell = row[column], !cell.isEmpty, let value, !(value is NSNull) else { continue }
                let mine: AnyHashable? = switch value {
                case let v as NSNumber where column == "interval": v.doubleValue
                case let v as NSNumber: v.intValue
                case let v as String: v
                default: nil
                }
                #expect(mine == theirs(cell), "frame \(frame) \(column): ours \(value), Wireshark's \(cell)")
                compared[column, default: 0] += 1
            }
        }
        // Fields that both captures carry (a link set up and used); the rest depend on the capture.
        for column in ["status", "handle", "bd_addr", "peer_address_type", "rssi", "interval", "latency",
                       "supervision_timeout", "ncmd", "completed", "role"] {
            #expect(compared[column, default: 0] > 0, "no \(column) compared in \(name): \(compared)")
        }
        if name == "cnrd__yeelock" {
            for column in ["reason", "version", "company", "subversion", "name"] {
                #expect(compared[column, default: 0] > 0, "no \(column) compared: \(compared)")
            }
        }
    }
}
