import BLECore
import BLETestSupport
import Foundation
import Testing
import BLEWire

/// `ble advertise` against the fake controller (see `FakeRadio`): the advertising commands it
/// sends, the exit after --duration, and what it refuses.
@Suite(.serialized, .timeLimit(.minutes(2))) struct CLIAdvertiseTests {
    @Test func advertisesTheDataAndExitsAfterTheDuration() async throws {
        let radio = FakeRadio([])
        defer { radio.close() }
        let run = try await radio.run(["advertise", "--name", "demo", "--service", "180D", "--service-data", "180F:64",
                                       "--manufacturer", "0x05F1:0102", "--interval", "200", "--duration", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        let commands = radio.fake.controller.commandsReceived
        let parameters = try #require(commands.last { $0.opcode.rawValue == 0x2006 })
        // 200 ms = 0x0140 units of 0.625 ms; ADV_IND.
        #expect(Array(parameters.parameters.prefix(5)) == [0x40, 0x01, 0x40, 0x01, 0x00])
        let data = try #require(commands.last { $0.opcode.rawValue == 0x2008 })
        // Flags 06 | name "demo" | 16-bit UUIDs 180D | service data 180F: 64 | manufacturer 0x05F1: 01 02.
        let expected: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0x09, 0x64, 0x65, 0x6D, 0x6F, 0x03, 0x03, 0x0D, 0x18,
                                 0x04, 0x16, 0x0F, 0x18, 0x64, 0x05, 0xFF, 0xF1, 0x05, 0x01, 0x02]
        #expect(data.parameters == [UInt8(expected.count)] + expected + [UInt8](repeating: 0, count: 31 - expected.count))
        // Enabled, then disabled when the duration is over.
        #expect(commands.filter { $0.opcode.rawValue == 0x200A }.map(\.parameters) == [[0x01], [0x00]])
        #expect(run.stderr.contains("advertising 24 octets (legacy commands, set 0) for 1 s"))
    }

    @Test func ownAddressStaticAdvertisesFromTheAdaptersStaticAddress() async throws {
        let radio = FakeRadio([])
        defer { radio.close() }
        let bonds = FileManager.default.temporaryDirectory.appendingPathComponent("ble-advertise-bonds-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: bonds) }
        let run = try await radio.run(["--bond-dir", bonds.path, "advertise", "--name", "demo", "--own-address", "static", "--duration", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        // The adapter's static random address, written to its bond directory the first time.
        let files = FileManager.default.enumerator(atPath: bonds.path)?.compactMap { $0 as? String } ?? []
        let file = try #require(files.first { $0.hasSuffix("own-static-address") }, "\(files)")
        let text = try String(contentsOf: bonds.appendingPathComponent(file), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let address = try #require(BluetoothAddress(text))
        #expect(address.isStaticRandom)
        let commands = radio.fake.controller.commandsReceived
        // LE Set Random Address (7.8.4) with it, least significant octet first, before the
        // parameters (7.8.5), whose Own_Address_Type is 0x01.
        let random = try #require(commands.last { $0.opcode.rawValue == 0x2005 })
        #expect(random.parameters == address.littleEndianBytes)
        let parameters = try #require(commands.last { $0.opcode.rawValue == 0x2006 })
        #expect(parameters.parameters[5] == 0x01)
        #expect(run.stderr.contains("(legacy commands, set 0) from \(address) for 1 s"), "\(run.stderr)")
    }

    @Test func dataTooLongForLegacyIsRefusedWithTheLengths() async throws {
        let radio = FakeRadio([])
        defer { radio.close() }
        let run = try await radio.run(["advertise", "--name", String(repeating: "n", count: 30), "--duration", "1"])
        #expect(run.status == 1)
        // Flags (3) + name (2 + 30) = 35 octets.
        #expect(run.stderr.contains("advertising data is 35 octets: legacy advertising carries at most 31"), "\(run.stderr)")
        #expect(!radio.fake.controller.commandsReceived.contains { $0.opcode.rawValue == 0x200A })
    }

    @Test func extendedNeedsAControllerWithExtendedAdvertising() async throws {
        let radio = FakeRadio([])
        defer { radio.close() }
        let run = try await radio.run(["advertise", "--extended", "--name", "demo", "--duration", "1"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("the controller has no extended advertising"), "\(run.stderr)")
    }

    @Test(arguments: [
        ["advertise", "--manufacturer", "05F1"],            // no colon
        ["advertise", "--manufacturer", "0x05F1:0g"],       // not hex
        ["advertise", "--service-data", "nope:01"],         // not a UUID
        ["advertise", "--interval", "5"],                   // below 20 ms
        ["advertise", "--name", ""],
    ])
    func usageErrorsExitTwo(_ arguments: [String]) async throws {
        let run = try await BLETool.run(arguments)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stderrLines.count == 1)
    }
}
