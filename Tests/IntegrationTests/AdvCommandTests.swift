import Foundation
import Testing

/// `ble adv`: one advertisement decoded as the gateway publishes it. BTHome payloads and key from
/// bthome-ble's tests/test_parser_v2.py, wrapped in AD structures (length, 0x16, UUID 0xFCD2 LE).
@Suite struct AdvCommandTests {
    @Test func jsonIsTheGatewaysMessage() async throws {
        let run = try await BLETool.run(["adv", "--address", "A4:C1:38:8D:18:B2/public", "--json", "02 01 06 0a 16 d2 fc 40 02 ca 09 03 bf 13"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == #"{"address":"A4:C1:38:8D:18:B2","addressType":"public","state":"present","serviceData":{"FCD2":"4002CA0903BF13"},"decoded":{"temperature":25.06,"humidity":50.55}}"# + "\n")
    }

    @Test func anEncryptedPayloadWithAndWithoutItsKey() async throws {
        let ad = "12 16 d2 fc 41 a4 72 66 c9 5f 73 00 11 22 33 78 23 72 14"
        let keyed = try await BLETool.run(["adv", "--address", "54:48:E6:8F:80:A5/public", "--key", "231d39c1d7cc1ab1aee224cd096db932", "--json", ad])
        #expect(keyed.status == 0, "\(keyed.stderr)")
        #expect(keyed.stdout.hasSuffix(#""decoded":{"temperature":25.06,"humidity":50.55,"encrypted":true}}"# + "\n"), "\(keyed.stdout)")
        // Without the key: exit 0, encrypted with the reason, no values.
        let bare = try await BLETool.run(["adv", "--address", "54:48:E6:8F:80:A5/public", ad])
        #expect(bare.status == 0, "\(bare.stderr)")
        #expect(bare.stdout.contains("encrypted  true\n"), "\(bare.stdout)")
        #expect(bare.stdout.contains(#"reason     encrypted; no key for 54:48:E6:8F:80:A5: add one under "keys" in the config"#), "\(bare.stdout)")
        #expect(!bare.stdout.contains("temperature") && !bare.stderr.contains("231d"))
    }

    @Test func theReadableListHasUnits() async throws {
        let run = try await BLETool.run(["adv", "--address", "A4:C1:38:8D:18:B2/public", "0a 16 d2 fc 40 02 ca 09 03 bf 13"])
        #expect(run.status == 0)
        #expect(run.stdout == "address      A4:C1:38:8D:18:B2 (public)\nformats      BTHome\ntemperature  25.06 °C\nhumidity     50.55 %\n")
    }

    @Test func malformedInputFails() async throws {
        // A structure whose length runs past the end: exit 1; not hex, a short key: usage errors.
        let cut = try await BLETool.run(["adv", "0a 16 d2 fc 40"])
        #expect(cut.status == 1 && cut.stderr.hasPrefix("ble: HEX does not parse as AD structures"), "\(cut.stderr)")
        #expect(try await BLETool.run(["adv", "zz"]).status == 2)
        #expect(try await BLETool.run(["adv", "--key", "0011", "0a16d2fc4002ca0903bf13"]).status == 2)
    }
}
