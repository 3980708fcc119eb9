import Testing
@_spi(Internals) @testable import BLECore
@testable import BLETransport
@_spi(Internals) @testable import BLEWire

/// Every HCI event and command in the real captures under Fixtures/captures/real decodes and
/// re-encodes byte for byte.
@Suite struct HCICaptureTests {
    static let files = [
        "real/phlash__blefun.btsnoop",
        "real/crossnite__NovaX-Escooter.btsnoop",
        "real/csacca__horizon-74-at-ble.btsnoop",
        "real/cnrd__yeelock.btsnoop",
    ]

    /// A short name for the kind of event, for counting.
    static func kind(_ e: HCIEvent) -> String {
        switch e {
        case .disconnectionComplete: return "0x05"
        case .encryptionChange(let c): return c.keySize == nil ? "0x08" : "0x59"
        case .readRemoteVersionInformationComplete: return "0x0c"
        case .commandComplete: return "0x0e"
        case .commandStatus: return "0x0f"
        case .hardwareError: return "0x10"
        case .numberOfCompletedPackets: return "0x13"
        case .dataBufferOverflow: return "0x1a"
        case .encryptionKeyRefreshComplete: return "0x30"
        case .leConnectionComplete: return "le 0x01"
        case .leAdvertisingReport: return "le 0x02"
        case .leConnectionUpdateComplete: return "le 0x03"
        case .leReadRemoteFeaturesComplete: return "le 0x04"
        case .leLongTermKeyRequest: return "le 0x05"
        case .leRemoteConnectionParameterRequest: return "le 0x06"
        case .leDataLengthChange: return "le 0x07"
        case .leEnhancedConnectionComplete(let c): return c.isV2 ? "le 0x29" : "le 0x0a"
        case .leDirectedAdvertisingReport: return "le 0x0b"
        case .lePHYUpdateComplete: return "le 0x0c"
        case .leExtendedAdvertisingReport: return "le 0x0d"
        case .leChannelSelectionAlgorithm: return "le 0x14"
        case .leAdvertisingSetTerminated: return "le 0x12"
        case .leUnknown(let s, _): return "le unknown \(s)"
        case .unknown(let c, _): return "unknown \(c)"
        }
    }

    struct Tally {
        var events: [String: Int] = [:]
        var decodedCommands = 0
        var otherCommands = 0
    }

    static func tally(_ file: String) throws -> Tally {
        let capture = try BTSnoopReader(bytes: try fixtureBytes("captures/" + file))
        var t = Tally()
        for record in capture.records {
            switch record.packet {
            case .event(let packet):
                let event = try HCIEvent(packet)
                #expect(event.packet == packet, "event \(packet.code) re-encodes differently")
                t.events[kind(event), default: 0] += 1
                // The fast path agrees with the full decoder on advertising reports.
                if packet.code == 0x3E {
                    var seen: [BluetoothAddress] = []
                    let n = try HCIEvent.forEachAdvertisingReport(in: packet.parameters) { seen.append($0.address) }
                    switch event {
                    case .leAdvertisingReport(let r): #expect(seen == r.map(\.address) && n == r.count)
                    case .leExtendedAdvertisingReport(let r): #expect(seen == r.map(\.address) && n == r.count)
                    default: #expect(n == 0)
                    }
                }
                if case .commandComplete(let c) = event { try checkReturnParameters(c) }
            case .command(let packet):
                let decoded = try HCICommandDecoded(packet)
                #expect(decoded.packet == packet, "command \(packet.opcode) re-encodes differently")
                if case .other = decoded { t.otherCommands += 1 } else { t.decodedCommands += 1 }
            default:
                break
            }
        }
        return t
    }

    /// Return parameters of the commands with decoders decode without error.
    static func checkReturnParameters(_ c: HCIEvent.CommandComplete) throws {
        let p = c.returnParameters
        switch c.opcode.rawValue {
        case 0x1001: _ = try HCIReturn.decode(HCIReturn.ReadLocalVersionInformation.self, from: p)
        case 0x1002: _ = try HCIReturn.decode(HCIReturn.ReadLocalSupportedCommands.self, from: p)
        case 0x1003: _ = try HCIReturn.decode(HCIReturn.ReadLocalSupportedFeatures.self, from: p)
        case 0x1005: _ = try HCIReturn.decode(HCIReturn.ReadBufferSize.self, from: p)
        case 0x1009: _ = try HCIReturn.decode(HCIReturn.ReadBDADDR.self, from: p)
        case 0x1405: _ = try HCIReturn.decode(HCIReturn.ReadRSSI.self, from: p)
        case 0x2002: _ = try HCIReturn.decode(HCIReturn.LEReadBufferSize.self, from: p)
        case 0x2003: _ = try HCIReturn.decode(HCIReturn.LEReadLocalSupportedFeatures.self, from: p)
        case 0x2023: _ = try HCIReturn.decode(HCIReturn.LEReadSuggestedDefaultDataLength.self, from: p)
        case 0x2030: _ = try HCIReturn.decode(HCIReturn.LEReadPHY.self, from: p)
        case 0x2060: _ = try HCIReturn.decode(HCIReturn.LEReadBufferSizeV2.self, from: p)
        default: break
        }
    }

    @Test(arguments: files)
    func everyEventAndCommandRoundTrips(file: String) throws {
        let t = try Self.tally(file)
        #expect(t.events.values.reduce(0, +) > 0)
        #expect(t.decodedCommands > 0)
    }

    // Counts from tshark 4.x over the same files, e.g.
    //   tshark -r phlash__blefun.btsnoop -Y "bthci_evt.le_meta_subevent == 0x02" | wc -l
    //   tshark -r phlash__blefun.btsnoop -T fields -e bthci_evt.code -e bthci_evt.le_meta_subevent -Y bthci_evt | sort | uniq -c
    @Test func phlashEventCountsMatchTshark() throws {
        let t = try Self.tally("real/phlash__blefun.btsnoop")
        #expect(t.events == [
            "0x05": 11, "0x0c": 12, "0x0e": 282, "0x0f": 71, "0x13": 9473,
            "le 0x01": 12, "le 0x02": 382, "le 0x03": 27, "le 0x04": 12,
        ])
    }

    // tshark -r crossnite__NovaX-Escooter.btsnoop -T fields -e bthci_evt.code -e bthci_evt.le_meta_subevent -Y bthci_evt | sort | uniq -c
    // (BR/EDR and vendor events 0x03, 0x06, 0x07, 0x0b, 0x17, 0x1b, 0x1c, 0x1d, 0x23, 0x2f,
    // 0x31, 0x32, 0x33, 0x36, 0x3d, 0xff are kept raw as `.unknown`.)
    @Test func crossniteEventCountsMatchTshark() throws {
        let t = try Self.tally("real/crossnite__NovaX-Escooter.btsnoop")
        #expect(t.events["le 0x0d"] == 1242)
        #expect(t.events["le 0x03"] == 3)
        #expect(t.events["le 0x04"] == 1)
        #expect(t.events["le 0x07"] == 1)
        #expect(t.events["le 0x0a"] == 1)
        #expect(t.events["0x0e"] == 738)
        #expect(t.events["0x0f"] == 23)
        #expect(t.events["0x13"] == 35)
        #expect(t.events["0x05"] == 2)
        #expect(t.events["0x0c"] == 2)
        #expect(t.events["unknown 255"] == 23)
    }

    /// The first packet of `kind` in a capture, decoded.
    static func first<T>(_ file: String, _ pick: (HCIPacket) throws -> T?) throws -> T? {
        let capture = try BTSnoopReader(bytes: try fixtureBytes("captures/" + file))
        for record in capture.records { if let v = try pick(record.packet) { return v } }
        return nil
    }

    // Field values as `tshark -V` prints the first packet matching
    //   -Y "bthci_evt.le_meta_subevent == 0x0d" (crossnite), "... == 0x02", "... == 0x01" and
    //   "bthci_cmd.opcode == 0x200d" (phlash).
    @Test func decodedFieldsMatchTshark() throws {
        let ext = try Self.first("real/crossnite__NovaX-Escooter.btsnoop") { p -> HCIEvent.LEExtendedAdvertisingReport? in
            guard case .event(let e) = p, case .leExtendedAdvertisingReport(let r) = try HCIEvent(e) else { return nil }
            return r.first
        }
        #expect(ext?.eventType == [.connectable, .scannable, .legacy] && ext?.eventType.dataStatus == .complete)
        #expect(ext?.addressType == 1 && ext?.address == BluetoothAddress("22:ED:DC:BD:A4:75"))
        #expect(ext?.primaryPHY == 1 && ext?.secondaryPHY == 0 && ext?.advertisingSID == 0xFF)
        #expect(ext?.txPower == 127 && ext?.rssi == -93 && ext?.periodicAdvertisingInterval == 0)
        #expect(ext?.directAddressType == 0 && ext?.directAddress == .zero && ext?.data.count == 29)
        #expect(ext.map { Array($0.data.prefix(7)) } == [0x02, 0x01, 0x02, 0x19, 0x16, 0xF1, 0xFC])

        let f = "real/phlash__blefun.btsnoop"
        let adv = try Self.first(f) { p -> HCIEvent.LEAdvertisingReport? in
            guard case .event(let e) = p, case .leAdvertisingReport(let r) = try HCIEvent(e) else { return nil }
            return r.first
        }
        #expect(adv?.eventType == 0 && adv?.addressType == 0 && adv?.address == BluetoothAddress("00:19:F5:93:FD:45"))
        #expect(adv?.data.count == 27 && adv?.rssi == -98)

        let conn = try Self.first(f) { p -> HCIEvent.LEConnectionComplete? in
            guard case .event(let e) = p, case .leConnectionComplete(let c) = try HCIEvent(e) else { return nil }
            return c
        }
        #expect(conn == .init(status: .success, handle: 0x0002, role: 0, peerAddressType: 1, peerAddress: BluetoothAddress("EA:76:52:B8:3B:E4")!,
                              connectionInterval: 39, peripheralLatency: 0, supervisionTimeout: 500, centralClockAccuracy: 5))

        let create = try Self.first(f) { p -> HCICommand.LECreateConnection? in
            guard case .command(let c) = p, case .leCreateConnection(let cc) = try HCICommandDecoded(c) else { return nil }
            return cc
        }
        #expect(create == .init(scanInterval: 96, scanWindow: 48, initiatorFilterPolicy: 0,
                                peer: LEAddress(BluetoothAddress("EA:76:52:B8:3B:E4")!, type: .random), ownAddressType: 1,
                                connection: .init(intervalMin: 24, intervalMax: 40, maxLatency: 0, supervisionTimeout: 500)))
    }
}
