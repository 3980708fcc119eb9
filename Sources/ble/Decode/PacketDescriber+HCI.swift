import BLEWire

/// HCI commands and events of `ble decode`: names and key fields (Vol 4, Part E, 7).
extension PacketDescriber {
    // MARK: Commands

    static func command(_ c: HCICommandPacket) -> (String, [(String, JSONValue)]) {
        var fields: [(String, JSONValue)] = [("opcode", .int(Int(c.opcode.rawValue))), ("plen", .int(c.parameters.count)),
                                             ("parameters", .string(hexString(c.parameters)))]
        var s = "\(opcodeName(c.opcode)) plen \(c.parameters.count)"
        guard let decoded = try? HCICommandDecoded(c) else { return (s, fields) }
        switch decoded {
        case .disconnect(let d):
            s += ": handle 0x\(hex(d.handle, width: 4)) reason \(d.reason)"
            fields += [("handle", .int(Int(d.handle))), ("reason", .int(Int(d.reason.rawValue)))]
        case .leSetScanEnable(let p):
            s += ": \(p.enable ? "enable" : "disable"), filter duplicates \(p.filterDuplicates ? "on" : "off")"
            fields += [("enable", .bool(p.enable)), ("filterDuplicates", .bool(p.filterDuplicates))]
        case .leSetScanParameters(let p):
            s += ": \(p.scanType == 1 ? "active" : "passive"), interval \(ms(p.scanInterval, 0.625)) ms, window \(ms(p.scanWindow, 0.625)) ms"
            fields += [("scanType", .string(p.scanType == 1 ? "active" : "passive")), ("intervalMs", msValue(p.scanInterval, 0.625)),
                       ("windowMs", msValue(p.scanWindow, 0.625)), ("ownAddressType", .int(Int(p.ownAddressType))),
                       ("filterPolicy", .int(Int(p.filterPolicy)))]
        case .leCreateConnection(let p):
            let peer = LEAddressType(rawValue: p.peerAddressType).map { "\(LEAddress(p.peerAddress, type: $0))" } ?? "\(p.peerAddress) (type \(p.peerAddressType))"
            s += ": peer \(peer), interval \(ms(p.connection.intervalMin, 1.25))-\(ms(p.connection.intervalMax, 1.25)) ms"
            fields += [("peer", .string(p.peerAddress.description)), ("peerAddressType", .int(Int(p.peerAddressType)))]
                + connectionFields(p.connection)
        case .leConnectionUpdate(let p):
            s += ": handle 0x\(hex(p.handle, width: 4)), interval \(ms(p.parameters.intervalMin, 1.25))-\(ms(p.parameters.intervalMax, 1.25)) ms, latency \(p.parameters.maxLatency), timeout \(Int(p.parameters.supervisionTimeout) * 10) ms"
            fields += [("handle", .int(Int(p.handle)))] + connectionFields(p.parameters)
        case .readRSSI(let h), .leReadRemoteFeatures(let h), .readRemoteVersionInformation(let h), .leReadPHY(let h):
            s += ": handle 0x\(hex(h, width: 4))"
            fields.append(("handle", .int(Int(h))))
        case .leSetRandomAddress(let a):
            s += ": \(a)"
            fields.append(("address", .string(a.description)))
        case .leSetAdvertisingEnable(let on):
            s += ": \(on ? "enable" : "disable")"
            fields.append(("enable", .bool(on)))
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
        var fields: [(String, JSONValue)] = [("event", .int(Int(e.code))), ("plen", .int(e.parameters.count)),
                                             ("parameters", .string(hexString(e.parameters)))]
        if e.code == HCIEvent.Code.leMeta, let sub = e.parameters.first { fields.append(("subevent", .int(Int(sub)))) }
        let name = HCIEventNames.event(e.code)
        guard let decoded = try? HCIEvent(e) else {
            var s = "\(name) (0x\(hex(e.code, width: 2))) plen \(e.parameters.count)"
            if e.code == HCIEvent.Code.leMeta, let sub = e.parameters.first {
                s = "\(HCIEventNames.leSubevent(sub)) (0x3E/0x\(hex(sub, width: 2))) plen \(e.parameters.count): undecodable"
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
            fields += [("ncmd", .int(Int(c.numHCICommandPackets))), ("returnParameters", .string(hexString(c.returnParameters)))]
        case .commandStatus(let c):
            s = "Command Status: \(opcodeName(c.opcode)) status \(c.status) ncmd \(c.numHCICommandPackets)"
            fields.append(("opcode", .int(Int(c.opcode.rawValue))))
            fields += [("status", .int(Int(c.status.rawValue))), ("ncmd", .int(Int(c.numHCICommandPackets)))]
        case .disconnectionComplete(let d):
            s = "Disconnection Complete: status \(d.status) handle 0x\(hex(d.handle, width: 4)) reason \(d.reason)"
            fields += [("status", .int(Int(d.status.rawValue))), ("handle", .int(Int(d.handle))), ("reason", .int(Int(d.reason.rawValue)))]
        case .numberOfCompletedPackets(let list):
            s = "Number Of Completed Packets: " + list.map { "handle 0x\(hex($0.handle, width: 4)) count \($0.count)" }.joined(separator: ", ")
            fields.append(("completed", .array(list.map { .object([("handle", .int(Int($0.handle))), ("count", .int(Int($0.count)))]) })))
        case .encryptionChange(let c):
            s = "Encryption Change: status \(c.status) handle 0x\(hex(c.handle, width: 4)) encryption \(c.encryptionEnabled)"
            fields += [("status", .int(Int(c.status.rawValue))), ("handle", .int(Int(c.handle))), ("encryption", .int(Int(c.encryptionEnabled)))]
            if let size = c.keySize { fields.append(("keySize", .int(Int(size)))) }
        case .encryptionKeyRefreshComplete(let status, let handle):
            s = "Encryption Key Refresh Complete: status \(status) handle 0x\(hex(handle, width: 4))"
            fields += [("status", .int(Int(status.rawValue))), ("handle", .int(Int(handle)))]
        case .readRemoteVersionInformationComplete(let r):
            s = "Read Remote Version Information Complete: status \(r.status) handle 0x\(hex(r.handle, width: 4)) version \(r.version.name) company \(AssignedNumbers.companyName(r.companyIdentifier) ?? "0x\(hex(r.companyIdentifier, width: 4))") subversion 0x\(hex(r.subversion, width: 4))"
            fields += [("status", .int(Int(r.status.rawValue))), ("handle", .int(Int(r.handle))), ("version", .int(Int(r.version.rawValue))),
                       ("company", .int(Int(r.companyIdentifier))), ("subversion", .int(Int(r.subversion)))]
        case .hardwareError(let code):
            s = "Hardware Error: code 0x\(hex(code, width: 2))"
            fields.append(("code", .int(Int(code))))
        case .leConnectionComplete(let c):
            s = "LE Connection Complete: status \(c.status) handle 0x\(hex(c.handle, width: 4)) role \(c.role == 0 ? "central" : "peripheral") peer \(c.peer.map { "\($0)" } ?? "\(c.peerAddress)") interval \(ms(c.connectionInterval, 1.25)) ms"
            fields += [("status", .int(Int(c.status.rawValue))), ("handle", .int(Int(c.handle))), ("role", .string(c.role == 0 ? "central" : "peripheral")),
                       ("peer", .string(c.peerAddress.description)), ("peerAddressType", .int(Int(c.peerAddressType)))]
                + linkFields(interval: c.connectionInterval, latency: c.peripheralLatency, timeout: c.supervisionTimeout)
        case .leEnhancedConnectionComplete(let c):
            s = "LE Enhanced Connection Complete\(c.isV2 ? " v2" : ""): status \(c.status) handle 0x\(hex(c.handle, width: 4)) role \(c.role == 0 ? "central" : "peripheral") peer \(c.peer.map { "\($0)" } ?? "\(c.peerAddress)") interval \(ms(c.connectionInterval, 1.25)) ms latency \(c.peripheralLatency) timeout \(Int(c.supervisionTimeout) * 10) ms"
            fields += [("status", .int(Int(c.status.rawValue))), ("handle", .int(Int(c.handle))), ("role", .string(c.role == 0 ? "central" : "peripheral")),
                       ("peer", .string(c.peerAddress.description)), ("peerAddressType", .int(Int(c.peerAddressType))),
                       ("localResolvablePrivateAddress", .string(c.localResolvablePrivateAddress.description)),
                       ("peerResolvablePrivateAddress", .string(c.peerResolvablePrivateAddress.description))]
                + linkFields(interval: c.connectionInterval, latency: c.peripheralLatency, timeout: c.supervisionTimeout)
        case .leConnectionUpdateComplete(let c):
            s = "LE Connection Update Complete: status \(c.status) handle 0x\(hex(c.handle, width: 4)) interval \(ms(c.connectionInterval, 1.25)) ms latency \(c.peripheralLatency) timeout \(Int(c.supervisionTimeout) * 10) ms"
            fields += [("status", .int(Int(c.status.rawValue))), ("handle", .int(Int(c.handle)))]
                + linkFields(interval: c.connectionInterval, latency: c.peripheralLatency, timeout: c.supervisionTimeout)
        case .leAdvertisingReport(let reports):
            s = "LE Advertising Report: " + reports.map { r in
                let type = LEAddressType(rawValue: r.addressType).map { "\(LEAddress(r.address, type: $0))" } ?? "\(r.address)"
                var t = "\(type) rssi \(r.rssi)"
                if let name = AdvertisingData(bytes: r.data).localName { t += " name \"\(name)\"" }
                return t
            }.joined(separator: "; ")
            fields.append(("reports", .array(reports.map { r in
                reportFields(address: r.address, addressType: r.addressType, rssi: Int(r.rssi), data: r.data,
                             extra: [("eventType", .int(Int(r.eventType)))])
            })))
        case .leExtendedAdvertisingReport(let reports):
            s = "LE Extended Advertising Report: " + reports.map { r in
                let type = LEAddressType(rawValue: r.addressType).map { "\(LEAddress(r.address, type: $0))" } ?? "\(r.address) (type 0x\(hex(r.addressType, width: 2)))"
                var t = "\(type) rssi \(r.rssi)"
                if r.eventType.contains(.scanResponse) { t += " scan response" }
                if r.eventType.contains(.legacy) { t += " legacy" }
                if let name = AdvertisingData(bytes: r.data).localName { t += " name \"\(name)\"" }
                return t
            }.joined(separator: "; ")
            fields.append(("reports", .array(reports.map { r in
                reportFields(address: r.address, addressType: r.addressType, rssi: Int(r.rssi), data: r.data, extra: [
                    ("eventType", .int(Int(r.eventType.rawValue))), ("scanResponse", .bool(r.eventType.contains(.scanResponse))),
                    ("legacy", .bool(r.eventType.contains(.legacy))), ("primaryPHY", .int(Int(r.primaryPHY))),
                    ("secondaryPHY", .int(Int(r.secondaryPHY))), ("advertisingSID", .int(Int(r.advertisingSID))),
                    ("txPower", .int(Int(r.txPower))), ("periodicAdvertisingInterval", .int(Int(r.periodicAdvertisingInterval))),
                ])
            })))
        case .leDataLengthChange(let d):
            s = "LE Data Length Change: handle 0x\(hex(d.handle, width: 4)) tx \(d.maxTxOctets) rx \(d.maxRxOctets) octets"
            fields += [("handle", .int(Int(d.handle))), ("maxTxOctets", .int(Int(d.maxTxOctets))), ("maxTxTime", .int(Int(d.maxTxTime))),
                       ("maxRxOctets", .int(Int(d.maxRxOctets))), ("maxRxTime", .int(Int(d.maxRxTime)))]
        case .leReadRemoteFeaturesComplete(let f):
            s = "LE Read Remote Features Complete: status \(f.status) handle 0x\(hex(f.handle, width: 4))"
            fields += [("status", .int(Int(f.status.rawValue))), ("handle", .int(Int(f.handle))),
                       ("features", .string("0x" + hex(f.features.rawValue, width: 16)))]
        case .leChannelSelectionAlgorithm(let h, let a):
            s = "LE Channel Selection Algorithm: handle 0x\(hex(h, width: 4)) algorithm #\(Int(a) + 1)"
            fields += [("handle", .int(Int(h))), ("algorithm", .int(Int(a) + 1))]
        case .leAdvertisingSetTerminated(let t):
            s = "LE Advertising Set Terminated: status \(t.status) set \(t.advertisingHandle) handle 0x\(hex(t.connectionHandle, width: 4)) events \(t.completedExtendedAdvertisingEvents)"
            fields += [("status", .int(Int(t.status.rawValue))), ("advertisingHandle", .int(Int(t.advertisingHandle))),
                       ("handle", .int(Int(t.connectionHandle))), ("completedEvents", .int(Int(t.completedExtendedAdvertisingEvents)))]
        case .leLongTermKeyRequest(let r):
            s = "LE Long Term Key Request: handle 0x\(hex(r.handle, width: 4)) ediv 0x\(hex(r.ediv, width: 4))"
            fields += [("handle", .int(Int(r.handle))), ("random", .string("0x" + hex(r.random, width: 16))), ("ediv", .int(Int(r.ediv)))]
        case .leRemoteConnectionParameterRequest(let r):
            s = "LE Remote Connection Parameter Request: handle 0x\(hex(r.handle, width: 4)) interval \(ms(r.intervalMin, 1.25))-\(ms(r.intervalMax, 1.25)) ms latency \(r.maxLatency) timeout \(Int(r.timeout) * 10) ms"
            fields += [("handle", .int(Int(r.handle))), ("intervalMinMs", msValue(r.intervalMin, 1.25)), ("intervalMaxMs", msValue(r.intervalMax, 1.25)),
                       ("latency", .int(Int(r.maxLatency))), ("supervisionTimeoutMs", .int(Int(r.timeout) * 10))]
        case .lePHYUpdateComplete(let u):
            s = "LE PHY Update Complete: status \(u.status) handle 0x\(hex(u.handle, width: 4)) tx PHY \(u.txPHY) rx PHY \(u.rxPHY)"
            fields += [("status", .int(Int(u.status.rawValue))), ("handle", .int(Int(u.handle))), ("txPHY", .int(Int(u.txPHY))), ("rxPHY", .int(Int(u.rxPHY)))]
        case .leUnknown(let sub, _):
            s = "\(HCIEventNames.leSubevent(sub)) (0x3E/0x\(hex(sub, width: 2)))"
        case .unknown(let code, _):
            s = "\(HCIEventNames.event(code)) (0x\(hex(code, width: 2)))"
        default:
            s = name
            if e.code == HCIEvent.Code.leMeta, let sub = e.parameters.first { s = HCIEventNames.leSubevent(sub) }
        }
        return (s + " plen \(e.parameters.count)", fields)
    }

    // MARK: JSON fields shared by several packets

    /// Connection_Interval, Peripheral_Latency and Supervision_Timeout of a link.
    static func linkFields(interval: UInt16, latency: UInt16, timeout: UInt16) -> [(String, JSONValue)] {
        [("intervalMs", msValue(interval, 1.25)), ("latency", .int(Int(latency))), ("supervisionTimeoutMs", .int(Int(timeout) * 10))]
    }

    /// The connection parameters of LE Create Connection and LE Connection Update.
    static func connectionFields(_ p: LEConnectionParameters) -> [(String, JSONValue)] {
        [("intervalMinMs", msValue(p.intervalMin, 1.25)), ("intervalMaxMs", msValue(p.intervalMax, 1.25)),
         ("latency", .int(Int(p.maxLatency))), ("supervisionTimeoutMs", .int(Int(p.supervisionTimeout) * 10))]
    }

    /// One advertising report: address, RSSI, the advertised name (exact text) and the data.
    static func reportFields(address: BluetoothAddress, addressType: UInt8, rssi: Int, data: [UInt8],
                             extra: [(String, JSONValue)]) -> JSONValue {
        .object([("address", .string(address.description)), ("addressType", .int(Int(addressType))), ("rssi", .int(rssi))]
            + extra + [("name", .optional(AdvertisingData(bytes: data).localName)), ("data", .string(hexString(data)))])
    }
}

/// A duration in milliseconds as a JSON number: 7.5 for 6 units of 1.25 ms.
func msValue(_ units: UInt16, _ unit: Double) -> JSONValue {
    let v = Double(units) * unit
    return v == v.rounded() ? .int(Int(v)) : .double(v)
}
