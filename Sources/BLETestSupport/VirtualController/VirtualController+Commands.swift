import BLECore
import BLEWire

/// Command handling: flow control, bring-up answers, scripted answers (Vol 4, Part E, 4.4 and 7).
extension VirtualController {
    /// Commands answered with Command Status rather than Command Complete (Vol 4, Part E, 7).
    static let statusCommands: Set<UInt16> = [0x0406, 0x041D, 0x200D, 0x2013, 0x2016, 0x2019, 0x2025, 0x2026, 0x2032, 0x2043]

    /// Opcodes this controller implements, by feature set.
    var implementedOpcodes: [UInt16] {
        var o: [UInt16] = [0x0406, 0x041D, 0x0C01, 0x0C03, 0x0C63, 0x0C6D, 0x1001, 0x1003, 0x1005, 0x1009, 0x1405, 0x1408,
                           0x2001, 0x2002, 0x2003, 0x2005, 0x2006, 0x2008, 0x2009, 0x200A, 0x200B, 0x200C, 0x200D,
                           0x200E, 0x200F, 0x2010, 0x2011, 0x2012, 0x2013, 0x2016, 0x2019, 0x201A, 0x201B, 0x2020, 0x2021]
        if options.leFeatures.contains(.leDataPacketLengthExtension) { o += [0x2022, 0x2023, 0x2024] }
        if options.leFeatures.contains(.le2MPHY) || options.leFeatures.contains(.leCodedPHY) { o += [0x2030, 0x2031, 0x2032] }
        if options.leFeatures.contains(.leExtendedAdvertising) { o += [0x2035, 0x2036, 0x2037, 0x2038, 0x2039, 0x203A, 0x203B, 0x203C, 0x2041, 0x2042, 0x2043] }
        if options.leFeatures.contains(.llPrivacy) { o += Self.resolvingListOpcodes }
        if options.supportsReadBufferSizeV2 { o.append(0x2060) }
        return o
    }

    /// The 64-octet Supported_Commands bitmap (Vol 4, Part E, 6.27) of `implementedOpcodes`.
    public var supportedCommands: HCISupportedCommands {
        var octets = [UInt8](repeating: 0, count: 64)
        for opcode in implementedOpcodes {
            if let (octet, bit) = HCISupportedCommands.positions[opcode] { octets[octet] |= 1 << UInt8(bit) }
        }
        return HCISupportedCommands(octets: octets)
    }

    // MARK: - Scripting

    /// Answers the next `times` commands with `opcode` (all of them when nil) with `answer`
    /// instead of the normal way.
    ///
    ///     vc.answer(.leCreateConnection, with: .status(.commandDisallowed), times: 1)
    public func answer(_ opcode: HCIOpcode, with answer: CommandAnswer, times: Int? = nil) {
        onQueue { scripted[opcode.rawValue] = (answer, times) }
    }

    /// Removes every scripted answer.
    public func clearScriptedAnswers() {
        onQueue { scripted.removeAll() }
    }

    /// Sets Num_HCI_Command_Packets to `count` and tells the host at once with a Command
    /// Complete for opcode 0x0000 (Vol 4, Part E, 7.7.14), releasing commands it holds.
    public func grantCommandCredits(_ count: UInt8) {
        onQueue {
            reportedCommandCredits = count
            hostCommandAllowance = Int(count)
            send(.commandComplete(.init(numHCICommandPackets: count, opcode: HCIOpcode(rawValue: 0), returnParameters: [])))
        }
    }

    /// Sets Num_HCI_Command_Packets for the following answers, without telling the host now.
    public func setCommandCredits(_ count: UInt8) {
        onQueue { reportedCommandCredits = count }
    }

    // MARK: - Answers

    func complete(_ opcode: HCIOpcode, _ returnParameters: [UInt8]) {
        hostCommandAllowance = Int(reportedCommandCredits)
        send(.commandComplete(.init(numHCICommandPackets: reportedCommandCredits, opcode: opcode, returnParameters: returnParameters)))
    }

    func status(_ opcode: HCIOpcode, _ status: HCIStatus) {
        hostCommandAllowance = Int(reportedCommandCredits)
        send(.commandStatus(.init(status: status, numHCICommandPackets: reportedCommandCredits, opcode: opcode)))
    }

    /// Fails `opcode` with `code` the way the command is normally answered.
    func fail(_ opcode: HCIOpcode, _ code: HCIStatus) {
        if Self.statusCommands.contains(opcode.rawValue) { status(opcode, code) } else { complete(opcode, [code.rawValue]) }
    }

    func unknownCommand(_ opcode: HCIOpcode) {
        switch options.unknownCommandAnswer {
        case .commandComplete: complete(opcode, [0x01])
        case .commandStatus: status(opcode, HCIStatus(rawValue: 0x01))
        }
    }

    func receiveCommand(_ packet: HCICommandPacket) {
        commands.append(packet)
        hostCommandAllowance -= 1
        if hostCommandAllowance < 0 { commandFlowViolations += 1 }
        defer { changed() }
        let opcode = packet.opcode
        if let (answer, remaining) = scripted[opcode.rawValue] {
            if let remaining {
                if remaining <= 1 { scripted[opcode.rawValue] = nil } else { scripted[opcode.rawValue] = (answer, remaining - 1) }
            }
            switch answer {
            case .none: return
            case .status(let code): fail(opcode, code)
            case .unknownCommand: unknownCommand(opcode)
            case .events(let make):
                hostCommandAllowance = Int(reportedCommandCredits)
                for e in make(packet) {
                    events.append(e)
                    send(.event(e))
                }
            }
            return
        }
        let command: HCICommandDecoded
        do {
            command = try HCICommandDecoded(packet)
        } catch {
            fail(opcode, HCIStatus(rawValue: 0x12)) // Invalid HCI Command Parameters
            return
        }
        // Read Local Supported Commands has no bit of its own: every controller answers it.
        guard implementedOpcodes.contains(opcode.rawValue) || opcode.rawValue == 0x1002 else {
            unknownCommand(opcode)
            return
        }
        interpret(command, opcode)
    }

    private func interpret(_ command: HCICommandDecoded, _ opcode: HCIOpcode) {
        switch command {
        case .reset:
            resetState()
            complete(opcode, [0])
        case .readLocalVersionInformation:
            var rp: [UInt8] = [0, options.hciVersion.rawValue]
            rp.appendLE(options.hciSubversion); rp.append(options.hciVersion.rawValue)
            rp.appendLE(options.manufacturer); rp.appendLE(options.lmpSubversion)
            complete(opcode, rp)
        case .readLocalSupportedCommands:
            complete(opcode, [0] + supportedCommands.octets)
        case .readLocalSupportedFeatures:
            // Bit 37: BR/EDR Not Supported; bit 38: LE Supported (Controller) (Vol 2, Part C, 3.3).
            var rp: [UInt8] = [0]; rp.appendLE(UInt64(1) << 37 | UInt64(1) << 38)
            complete(opcode, rp)
        case .readBufferSize:
            var rp: [UInt8] = [0]; rp.appendLE(options.aclPacketLength); rp.append(0)
            rp.appendLE(UInt16(options.aclPacketCount)); rp.appendLE(UInt16(0))
            complete(opcode, rp)
        case .readBDADDR:
            complete(opcode, [0] + address.littleEndianBytes)
        case .setEventMask(let m):
            eventMask = m
            complete(opcode, [0])
        case .leSetEventMask(let m):
            leEventMask = m
            complete(opcode, [0])
        case .setEventMaskPage2, .writeLEHostSupported, .leWriteSuggestedDefaultDataLength, .leSetDefaultPHY:
            complete(opcode, [0])
        case .leReadBufferSize:
            var rp: [UInt8] = [0]; rp.appendLE(options.aclPacketLength); rp.append(options.aclPacketCount)
            complete(opcode, rp)
        case .leReadBufferSizeV2:
            var rp: [UInt8] = [0]; rp.appendLE(options.aclPacketLength); rp.append(options.aclPacketCount)
            rp.appendLE(UInt16(0)); rp.append(0)
            complete(opcode, rp)
        case .leReadLocalSupportedFeatures:
            var rp: [UInt8] = [0]; rp.appendLE(options.leFeatures.rawValue)
            complete(opcode, rp)
        case .leSetRandomAddress(let a):
            randomAddress = a
            complete(opcode, [0])
        case .leReadSuggestedDefaultDataLength:
            var rp: [UInt8] = [0]; rp.appendLE(UInt16(27)); rp.appendLE(UInt16(328))
            complete(opcode, rp)
        case .leSetScanParameters(let p):
            guard scan == nil else { return fail(opcode, .commandDisallowed) }
            scanParameters.legacyActive = p.scanType == 1
            complete(opcode, [0])
        case .leSetScanEnable(let p):
            if p.enable, scan == nil, pending != nil, !options.initiatesWhileScanning { return fail(opcode, .commandDisallowed) }
            complete(opcode, [0])
            if p.enable {
                if scan == nil { startScan(extended: false, active: scanParameters.legacyActive, filterDuplicates: p.filterDuplicates) }
            } else {
                stopScan()
            }
        case .leSetExtendedScanParameters(let p):
            guard scan == nil else { return fail(opcode, .commandDisallowed) }
            scanParameters.extendedActive = (p.le1M ?? p.leCoded)?.scanType == 1
            complete(opcode, [0])
        case .leSetExtendedScanEnable(let p):
            if p.enable, scan == nil, pending != nil, !options.initiatesWhileScanning { return fail(opcode, .commandDisallowed) }
            complete(opcode, [0])
            if p.enable {
                if scan == nil { startScan(extended: true, active: scanParameters.extendedActive, filterDuplicates: p.filterDuplicates != 0) }
            } else {
                stopScan()
            }
        case .leCreateConnection(let c):
            createConnection(opcode, peer: LEAddress(c.peerAddress, type: LEAddressType(rawValue: c.peerAddressType) ?? .public), c.connection,
                             usesAcceptList: c.initiatorFilterPolicy == 0x01)
        case .leExtendedCreateConnection(let c):
            guard let phy = c.le1M ?? c.le2M ?? c.leCoded else { return fail(opcode, HCIStatus(rawValue: 0x12)) }
            createConnection(opcode, peer: LEAddress(c.peerAddress, type: LEAddressType(rawValue: c.peerAddressType) ?? .public), phy.connection,
                             usesAcceptList: c.initiatorFilterPolicy == 0x01)
        case .other(let packet) where (0x200F...0x2012).contains(opcode.rawValue):
            interpretAcceptListCommand(packet)
        case .other(let packet) where Self.resolvingListOpcodes.contains(opcode.rawValue):
            interpretResolvingListCommand(packet)
        case .leCreateConnectionCancel:
            cancelConnection(opcode)
        default:
            if interpretAdvertising(command, opcode) { return }
            interpretLinkCommand(command, opcode)
        }
    }
}
