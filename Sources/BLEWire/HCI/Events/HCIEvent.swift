/// A decoded HCI event (Vol 4, Part E, 7.7). Events and LE subevents this codec does not
/// model are kept raw in `.unknown` / `.leUnknown`; `packet` re-encodes every case to the
/// exact bytes it was decoded from. Building an event whose parameters exceed 255 octets is
/// the caller's mistake: the length field cannot carry it.
///
///     switch try HCIEvent(eventPacket) {
///     case .commandComplete(let c): print(c.opcode)
///     case .leAdvertisingReport(let reports): reports.forEach { print($0.address) }
///     default: break
///     }
public enum HCIEvent: Hashable, Sendable {
    case disconnectionComplete(DisconnectionComplete)
    /// Encryption Change v1 (0x08) when `keySize` is nil, v2 (0x59) otherwise.
    case encryptionChange(EncryptionChange)
    case readRemoteVersionInformationComplete(ReadRemoteVersionInformationComplete)
    case commandComplete(CommandComplete)
    case commandStatus(CommandStatus)
    /// HCI_Hardware_Error (7.7.16).
    case hardwareError(code: UInt8)
    /// HCI_Number_Of_Completed_Packets (7.7.19).
    case numberOfCompletedPackets([CompletedPackets])
    /// HCI_Data_Buffer_Overflow (7.7.26): 0x00 synchronous, 0x01 ACL.
    case dataBufferOverflow(linkType: UInt8)
    /// HCI_Encryption_Key_Refresh_Complete (7.7.39).
    case encryptionKeyRefreshComplete(status: HCIStatus, handle: UInt16)
    case leConnectionComplete(LEConnectionComplete)
    case leAdvertisingReport([LEAdvertisingReport])
    case leConnectionUpdateComplete(LEConnectionUpdateComplete)
    case leReadRemoteFeaturesComplete(LEReadRemoteFeaturesComplete)
    case leLongTermKeyRequest(LELongTermKeyRequest)
    case leRemoteConnectionParameterRequest(LERemoteConnectionParameterRequest)
    case leDataLengthChange(LEDataLengthChange)
    /// Enhanced Connection Complete v1 (0x0A) or v2 (0x29), by `isV2`.
    case leEnhancedConnectionComplete(LEEnhancedConnectionComplete)
    case leDirectedAdvertisingReport([LEDirectedAdvertisingReport])
    case lePHYUpdateComplete(LEPHYUpdateComplete)
    case leExtendedAdvertisingReport([LEExtendedAdvertisingReport])
    /// HCI_LE_Channel_Selection_Algorithm (7.7.65.20): 0x00 algorithm #1, 0x01 algorithm #2.
    case leChannelSelectionAlgorithm(handle: UInt16, algorithm: UInt8)
    case leAdvertisingSetTerminated(LEAdvertisingSetTerminated)
    /// An LE Meta subevent not modelled here; `parameters` follow the Subevent_Code.
    case leUnknown(subevent: UInt8, parameters: [UInt8])
    /// An event not modelled here, raw.
    case unknown(code: UInt8, parameters: [UInt8])

    /// Event codes (Vol 4, Part E, 7.7).
    public enum Code {
        public static let disconnectionComplete: UInt8 = 0x05
        public static let encryptionChangeV1: UInt8 = 0x08
        public static let readRemoteVersionInformationComplete: UInt8 = 0x0C
        public static let commandComplete: UInt8 = 0x0E
        public static let commandStatus: UInt8 = 0x0F
        public static let hardwareError: UInt8 = 0x10
        public static let numberOfCompletedPackets: UInt8 = 0x13
        public static let dataBufferOverflow: UInt8 = 0x1A
        public static let encryptionKeyRefreshComplete: UInt8 = 0x30
        public static let leMeta: UInt8 = 0x3E
        public static let encryptionChangeV2: UInt8 = 0x59
    }

    /// LE Meta Subevent_Codes (Vol 4, Part E, 7.7.65).
    public enum LESubevent {
        public static let connectionComplete: UInt8 = 0x01
        public static let advertisingReport: UInt8 = 0x02
        public static let connectionUpdateComplete: UInt8 = 0x03
        public static let readRemoteFeaturesComplete: UInt8 = 0x04
        public static let longTermKeyRequest: UInt8 = 0x05
        public static let remoteConnectionParameterRequest: UInt8 = 0x06
        public static let dataLengthChange: UInt8 = 0x07
        public static let enhancedConnectionCompleteV1: UInt8 = 0x0A
        public static let directedAdvertisingReport: UInt8 = 0x0B
        public static let phyUpdateComplete: UInt8 = 0x0C
        public static let extendedAdvertisingReport: UInt8 = 0x0D
        public static let advertisingSetTerminated: UInt8 = 0x12
        public static let channelSelectionAlgorithm: UInt8 = 0x14
        public static let enhancedConnectionCompleteV2: UInt8 = 0x29
    }

    /// Decodes an event packet. Known events must match their parameter table exactly.
    public init(_ packet: HCIEventPacket) throws(DecodeError) {
        let p = packet.parameters
        switch packet.code {
        case Code.disconnectionComplete:
            var r = ByteReader(p, context: "HCI_Disconnection_Complete")
            self = .disconnectionComplete(try .init(&r)); try r.expectEnd()
        case Code.encryptionChangeV1:
            var r = ByteReader(p, context: "HCI_Encryption_Change [v1]")
            self = .encryptionChange(try .init(&r, v2: false)); try r.expectEnd()
        case Code.encryptionChangeV2:
            var r = ByteReader(p, context: "HCI_Encryption_Change [v2]")
            self = .encryptionChange(try .init(&r, v2: true)); try r.expectEnd()
        case Code.readRemoteVersionInformationComplete:
            var r = ByteReader(p, context: "HCI_Read_Remote_Version_Information_Complete")
            self = .readRemoteVersionInformationComplete(try .init(&r)); try r.expectEnd()
        case Code.commandComplete:
            var r = ByteReader(p, context: "HCI_Command_Complete")
            self = .commandComplete(try .init(&r))
        case Code.commandStatus:
            var r = ByteReader(p, context: "HCI_Command_Status")
            self = .commandStatus(try .init(&r)); try r.expectEnd()
        case Code.hardwareError:
            var r = ByteReader(p, context: "HCI_Hardware_Error")
            self = .hardwareError(code: try r.u8()); try r.expectEnd()
        case Code.numberOfCompletedPackets:
            var r = ByteReader(p, context: "HCI_Number_Of_Completed_Packets")
            let count = Int(try r.u8())
            try r.need(count * 4)
            var entries: [CompletedPackets] = []
            entries.reserveCapacity(count)
            for _ in 0..<count { entries.append(CompletedPackets(handle: try r.u16(), count: try r.u16())) }
            try r.expectEnd()
            self = .numberOfCompletedPackets(entries)
        case Code.dataBufferOverflow:
            var r = ByteReader(p, context: "HCI_Data_Buffer_Overflow")
            self = .dataBufferOverflow(linkType: try r.u8()); try r.expectEnd()
        case Code.encryptionKeyRefreshComplete:
            var r = ByteReader(p, context: "HCI_Encryption_Key_Refresh_Complete")
            let status = HCIStatus(rawValue: try r.u8())
            self = .encryptionKeyRefreshComplete(status: status, handle: try r.u16()); try r.expectEnd()
        case Code.leMeta:
            self = try Self.leMeta(p)
        default:
            self = .unknown(code: packet.code, parameters: p)
        }
    }

    private static func leMeta(_ p: [UInt8]) throws(DecodeError) -> HCIEvent {
        var r = ByteReader(p, context: "HCI_LE_Meta_Event")
        let subevent = try r.u8()
        let event: HCIEvent
        switch subevent {
        case LESubevent.connectionComplete:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Connection_Complete")
            event = .leConnectionComplete(try .init(&r))
        case LESubevent.advertisingReport:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Advertising_Report")
            event = .leAdvertisingReport(try reports(&r, minimumSize: LEAdvertisingReport.fixedSize, LEAdvertisingReport.init))
        case LESubevent.connectionUpdateComplete:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Connection_Update_Complete")
            event = .leConnectionUpdateComplete(try .init(&r))
        case LESubevent.readRemoteFeaturesComplete:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Read_Remote_Features_Complete")
            event = .leReadRemoteFeaturesComplete(try .init(&r))
        case LESubevent.longTermKeyRequest:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Long_Term_Key_Request")
            event = .leLongTermKeyRequest(try .init(&r))
        case LESubevent.remoteConnectionParameterRequest:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Remote_Connection_Parameter_Request")
            event = .leRemoteConnectionParameterRequest(try .init(&r))
        case LESubevent.dataLengthChange:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Data_Length_Change")
            event = .leDataLengthChange(try .init(&r))
        case LESubevent.enhancedConnectionCompleteV1:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Enhanced_Connection_Complete [v1]")
            event = .leEnhancedConnectionComplete(try .init(&r, v2: false))
        case LESubevent.enhancedConnectionCompleteV2:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Enhanced_Connection_Complete [v2]")
            event = .leEnhancedConnectionComplete(try .init(&r, v2: true))
        case LESubevent.directedAdvertisingReport:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Directed_Advertising_Report")
            event = .leDirectedAdvertisingReport(try reports(&r, minimumSize: LEDirectedAdvertisingReport.size, LEDirectedAdvertisingReport.init))
        case LESubevent.phyUpdateComplete:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_PHY_Update_Complete")
            event = .lePHYUpdateComplete(try .init(&r))
        case LESubevent.extendedAdvertisingReport:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Extended_Advertising_Report")
            event = .leExtendedAdvertisingReport(try reports(&r, minimumSize: LEExtendedAdvertisingReport.fixedSize, LEExtendedAdvertisingReport.init))
        case LESubevent.advertisingSetTerminated:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Advertising_Set_Terminated")
            event = .leAdvertisingSetTerminated(try .init(&r))
        case LESubevent.channelSelectionAlgorithm:
            r = ByteReader(p, range: 1..<p.count, context: "HCI_LE_Channel_Selection_Algorithm")
            let handle = try r.u16()
            event = .leChannelSelectionAlgorithm(handle: handle, algorithm: try r.u8())
        default:
            return .leUnknown(subevent: subevent, parameters: r.rest())
        }
        try r.expectEnd()
        return event
    }

    /// Num_Reports, then the reports. The count is checked against the bytes present before
    /// anything is reserved.
    private static func reports<R>(_ r: inout ByteReader, minimumSize: Int,
                                   _ decode: (inout ByteReader) throws(DecodeError) -> R) throws(DecodeError) -> [R] {
        let count = Int(try r.u8())
        guard count * minimumSize <= r.remaining else {
            throw .malformed(what: "\(r.context)", detail: "Num_Reports \(count) needs at least \(count * minimumSize) bytes, \(r.remaining) present")
        }
        var out: [R] = []
        out.reserveCapacity(count)
        for _ in 0..<count { out.append(try decode(&r)) }
        return out
    }

    /// The event packet: code and parameters.
    public var packet: HCIEventPacket {
        var p: [UInt8] = []
        let code: UInt8
        switch self {
        case .disconnectionComplete(let e): code = Code.disconnectionComplete; e.encode(into: &p)
        case .encryptionChange(let e):
            code = e.keySize == nil ? Code.encryptionChangeV1 : Code.encryptionChangeV2
            e.encode(into: &p)
        case .readRemoteVersionInformationComplete(let e): code = Code.readRemoteVersionInformationComplete; e.encode(into: &p)
        case .commandComplete(let e): code = Code.commandComplete; e.encode(into: &p)
        case .commandStatus(let e): code = Code.commandStatus; e.encode(into: &p)
        case .hardwareError(let c): code = Code.hardwareError; p.append(c)
        case .numberOfCompletedPackets(let entries):
            code = Code.numberOfCompletedPackets
            p.append(UInt8(truncatingIfNeeded: entries.count))
            for e in entries { p.appendLE(e.handle); p.appendLE(e.count) }
        case .dataBufferOverflow(let t): code = Code.dataBufferOverflow; p.append(t)
        case .encryptionKeyRefreshComplete(let status, let handle):
            code = Code.encryptionKeyRefreshComplete
            p.append(status.rawValue); p.appendLE(handle)
        case .unknown(let c, let params): return HCIEventPacket(code: c, parameters: params)
        default:
            code = Code.leMeta
            encodeLEMeta(into: &p)
        }
        return HCIEventPacket(code: code, parameters: p)
    }

    private func encodeLEMeta(into p: inout [UInt8]) {
        switch self {
        case .leConnectionComplete(let e): p.append(LESubevent.connectionComplete); e.encode(into: &p)
        case .leAdvertisingReport(let reports):
            p.append(LESubevent.advertisingReport); p.append(UInt8(truncatingIfNeeded: reports.count))
            for r in reports { r.encode(into: &p) }
        case .leConnectionUpdateComplete(let e): p.append(LESubevent.connectionUpdateComplete); e.encode(into: &p)
        case .leReadRemoteFeaturesComplete(let e): p.append(LESubevent.readRemoteFeaturesComplete); e.encode(into: &p)
        case .leLongTermKeyRequest(let e): p.append(LESubevent.longTermKeyRequest); e.encode(into: &p)
        case .leRemoteConnectionParameterRequest(let e): p.append(LESubevent.remoteConnectionParameterRequest); e.encode(into: &p)
        case .leDataLengthChange(let e): p.append(LESubevent.dataLengthChange); e.encode(into: &p)
        case .leEnhancedConnectionComplete(let e):
            p.append(e.isV2 ? LESubevent.enhancedConnectionCompleteV2 : LESubevent.enhancedConnectionCompleteV1)
            e.encode(into: &p)
        case .leDirectedAdvertisingReport(let reports):
            p.append(LESubevent.directedAdvertisingReport); p.append(UInt8(truncatingIfNeeded: reports.count))
            for r in reports { r.encode(into: &p) }
        case .lePHYUpdateComplete(let e): p.append(LESubevent.phyUpdateComplete); e.encode(into: &p)
        case .leExtendedAdvertisingReport(let reports):
            p.append(LESubevent.extendedAdvertisingReport); p.append(UInt8(truncatingIfNeeded: reports.count))
            for r in reports { r.encode(into: &p) }
        case .leChannelSelectionAlgorithm(let handle, let algorithm):
            p.append(LESubevent.channelSelectionAlgorithm); p.appendLE(handle); p.append(algorithm)
        case .leAdvertisingSetTerminated(let e): p.append(LESubevent.advertisingSetTerminated); e.encode(into: &p)
        case .leUnknown(let subevent, let params): p.append(subevent); p.append(contentsOf: params)
        default: break
        }
    }
}
