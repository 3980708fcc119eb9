import BLECore

/// HCI commands and events of `ble decode`: names and key fields (Vol 4, Part E, 7).
extension PacketDescriber {
    // MARK: Commands

    static func command(_ c: HCICommandPacket) -> (String, [(String, JSONValue)]) {
        var fields: [(String, JSONValue)] = [("opcode", .int(Int(c.opcode.rawValue))), ("plen", .int(c.parameters.count))]
        var s = "\(opcodeName(c.opcode)) plen \(c.parameters.count)"
        guard let decoded = try? HCICommandDecoded(c) else { return (s, fields) }
        switch decoded {
        case .disconnect(let d):
            s += ": handle 0x\(hex(d.handle, width: 4)) reason \(d.reason)"
            fields.append(("handle", .int(Int(d.handle))))
        case .leSetScanEnable(let p):
            s += ": \(p.enable ? "enable" : "disable"), filter duplicates \(p.filterDuplicates ? "on" : "off")"
        case .leSetScanParameters(let p):
            s += ": \(p.scanType == 1 ? "active" : "passive"), interval \(ms(p.scanInterval, 0.625)) ms, window \(ms(p.scanWindow, 0.625)) ms"
        case .leCreateConnection(let p):
            let peer = LEAddressType(rawValue: p.peerAddressType).map { "\(LEAddress(p.peerAddress, type: $0))" } ?? "\(p.peerAddress) (type \(p.peerAddressType))"
            s += ": peer \(peer), interval \(ms(p.connection.intervalMin, 1.25))-\(ms(p.connection.intervalMax, 1.25)) ms"
            fields.append(("peer", .string(p.peerAddress.description)))
        case .leConnectionUpdate(let p):
            s += ": handle 0x\(hex(p.handle, width: 4)), interval \(ms(p.parameters.intervalMin, 1.25))-\(ms(p.parameters.intervalMax, 1.25)) ms, latency \(p.parameters.maxLatency), timeout \(Int(p.parameters.supervisionTimeout) * 10) ms"
            fields.append(("handle", .int(Int(p.handle))))
        case .readRSSI(let h), .leReadRemoteFeatures(let h), .readRemoteVersionInformation(let h), .leReadPHY(let h):
            s += ": handle 0x\(hex(h, width: 4))"
            fields.append(("handle", .int(Int(h))))
        case .leSetRandomAddress(let a):
            s += ": \(a)"
        case .leSetAdvertisingEnable(let on):
            s += ": \(on ? "enable" : "disable")"
        default:
            break
        }
        return (s, fields)
    }

    /// Opcode 0x0000 is the No Operation opcode (Vol 4, Part E, 7.7.14): a controller sends
    /// it to give the host command credits.
    static func opcodeName(_ o: HCIOpcode) -> String {
        o.rawValue == 0 ? "HCI_NOP (0x0000)" : "\(o)"
    }

    // MARK: Events

    static func event(_ e: HCIEventPacket) -> (String, [(String, JSONValue)]) {
        var fields: [(String, JSONValue)] = [("event", .int(Int(e.code))), ("plen", .int(e.parameters.count))]
        let name = HCIEventNames.event(e.code)
        guard let decoded = try? HCIEvent(e) else {
            var s = "\(name) (0x\(hex(e.code, width: 2))) plen \(e.parameters.count)"
            if e.code == HCIEvent.Code.leMeta, let sub = e.parameters.first {
                s = "\(HCIEventNames.leSubevent(sub)) (0x3E/0x\(hex(sub, width: 2))) plen \(e.parameters.count): undecodable"
                fields.append(("subevent", .int(Int(sub))))
            } else {
                s += ": undecodable"
            }
            return (s, fields)
        }
        var s: String
        switch decoded {
        case .commandComplete(let c):
            s = "Command Complete: \(opcodeName(c.opcode))"
            if let st = c.status { s += " status \(st)" }
            s += " ncmd \(c.numHCICommandPackets)"
            fields.append(("opcode", .int(Int(c.opcode.rawValue))))
            if let st = c.status { fields.append(("status", .int(Int(st.rawValue)))) }
        case .commandStatus(let c):
            s = "Command Status: \(opcodeName(c.opcode)) status \(c.status) ncmd \(c.numHCICommandPackets)"
            fields.append(("opcode", .int(Int(c.opcode.rawValue))))
            fields.append(("status", .int(Int(c.status.rawValue))))
        case .disconnectionComplete(let d):
            s = "Disconnection Complete: status \(d.status) handle 0x\(hex(d.handle, width: 4)) reason \(d.reason)"
            fields.append(("handle", .int(Int(d.handle))))
        case .numberOfCompletedPackets(let list):
            s = "Number Of Completed Packets: " + list.map { "handle 0x\(hex($0.handle, width: 4)) count \($0.count)" }.joined(separator: ", ")
        case .encryptionChange(let c):
            s = "Encryption Change: status \(c.status) handle 0x\(hex(c.handle, width: 4)) encryption \(c.encryptionEnabled)"
        case .readRemoteVersionInformationComplete(let r):
            s = "Read Remote Version Information Complete: status \(r.status) handle 0x\(hex(r.handle, width: 4)) version \(r.version.name) company \(AssignedNumbers.companyName(r.companyIdentifier) ?? "0x\(hex(r.companyIdentifier, width: 4))") subversion 0x\(hex(r.subversion, width: 4))"
            fields.append(("handle", .int(Int(r.handle))))
        case .hardwareError(let code):
            s = "Hardware Error: code 0x\(hex(code, width: 2))"
        case .leConnectionComplete(let c):
            s = "LE Connection Complete: status \(c.status) handle 0x\(hex(c.handle, width: 4)) role \(c.role == 0 ? "central" : "peripheral") peer \(c.peer.map { "\($0)" } ?? "\(c.peerAddress)") interval \(ms(c.connectionInterval, 1.25)) ms"
            fields.append(("handle", .int(Int(c.handle))))
        case .leEnhancedConnectionComplete(let c):
            s = "LE Enhanced Connection Complete\(c.isV2 ? " v2" : ""): status \(c.status) handle 0x\(hex(c.handle, width: 4)) role \(c.role == 0 ? "central" : "peripheral") peer \(c.peer.map { "\($0)" } ?? "\(c.peerAddress)") interval \(ms(c.connectionInterval, 1.25)) ms latency \(c.peripheralLatency) timeout \(Int(c.supervisionTimeout) * 10) ms"
            fields.append(("handle", .int(Int(c.handle))))
        case .leConnectionUpdateComplete(let c):
            s = "LE Connection Update Complete: status \(c.status) handle 0x\(hex(c.handle, width: 4)) interval \(ms(c.connectionInterval, 1.25)) ms latency \(c.peripheralLatency) timeout \(Int(c.supervisionTimeout) * 10) ms"
            fields.append(("handle", .int(Int(c.handle))))
        case .leAdvertisingReport(let reports):
            s = "LE Advertising Report: " + reports.map { r in
                let type = LEAddressType(rawValue: r.addressType).map { "\(LEAddress(r.address, type: $0))" } ?? "\(r.address)"
                var t = "\(type) rssi \(r.rssi)"
                if let name = AdvertisingData(bytes: r.data).localName { t += " name \"\(name)\"" }
                return t
            }.joined(separator: "; ")
        case .leExtendedAdvertisingReport(let reports):
            s = "LE Extended Advertising Report: " + reports.map { r in
                let type = LEAddressType(rawValue: r.addressType).map { "\(LEAddress(r.address, type: $0))" } ?? "\(r.address) (type 0x\(hex(r.addressType, width: 2)))"
                var t = "\(type) rssi \(r.rssi)"
                if r.eventType.contains(.scanResponse) { t += " scan response" }
                if r.eventType.contains(.legacy) { t += " legacy" }
                if let name = AdvertisingData(bytes: r.data).localName { t += " name \"\(name)\"" }
                return t
            }.joined(separator: "; ")
        case .leDataLengthChange(let d):
            s = "LE Data Length Change: handle 0x\(hex(d.handle, width: 4)) tx \(d.maxTxOctets) rx \(d.maxRxOctets) octets"
        case .leReadRemoteFeaturesComplete(let f):
            s = "LE Read Remote Features Complete: status \(f.status) handle 0x\(hex(f.handle, width: 4))"
        case .leChannelSelectionAlgorithm(let h, let a):
            s = "LE Channel Selection Algorithm: handle 0x\(hex(h, width: 4)) algorithm #\(Int(a) + 1)"
        case .leUnknown(let sub, _):
            s = "\(HCIEventNames.leSubevent(sub)) (0x3E/0x\(hex(sub, width: 2)))"
            fields.append(("subevent", .int(Int(sub))))
        case .unknown(let code, _):
            s = "\(HCIEventNames.event(code)) (0x\(hex(code, width: 2)))"
        default:
            s = name
            if e.code == HCIEvent.Code.leMeta, let sub = e.parameters.first { s = HCIEventNames.leSubevent(sub) }
        }
        return (s + " plen \(e.parameters.count)", fields)
    }
}
