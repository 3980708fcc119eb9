/// Connection commands: create (legacy and extended), cancel, update, parameter request
/// replies, data length, PHY, remote features (Vol 4, Part E, 7.8).
extension HCICommand {
    /// HCI_LE_Create_Connection (7.8.12).
    public static func leCreateConnection(_ p: LECreateConnection) -> HCICommandPacket { p.packet }
    /// HCI_LE_Extended_Create_Connection [v1] (7.8.66).
    public static func leExtendedCreateConnection(_ p: LEExtendedCreateConnection) -> HCICommandPacket { p.packet }
    /// HCI_LE_Create_Connection_Cancel (7.8.13).
    public static func leCreateConnectionCancel() -> HCICommandPacket { bare(0x200E) }
    /// HCI_LE_Connection_Update (7.8.18).
    public static func leConnectionUpdate(handle: UInt16, _ parameters: LEConnectionParameters) -> HCICommandPacket {
        LEConnectionUpdate(handle: handle, parameters: parameters).packet
    }
    /// HCI_LE_Read_Remote_Features (7.8.21).
    public static func leReadRemoteFeatures(handle: UInt16) -> HCICommandPacket { handleOnly(0x2016, handle) }
    /// HCI_LE_Remote_Connection_Parameter_Request_Reply (7.8.31).
    public static func leRemoteConnectionParameterRequestReply(handle: UInt16, _ parameters: LEConnectionParameters) -> HCICommandPacket {
        LERemoteConnectionParameterRequestReply(handle: handle, parameters: parameters).packet
    }
    /// HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply (7.8.32).
    public static func leRemoteConnectionParameterRequestNegativeReply(handle: UInt16, reason: HCIStatus) -> HCICommandPacket {
        LERemoteConnectionParameterRequestNegativeReply(handle: handle, reason: reason).packet
    }
    /// HCI_LE_Set_Data_Length (7.8.33).
    public static func leSetDataLength(handle: UInt16, txOctets: UInt16, txTime: UInt16) -> HCICommandPacket {
        LESetDataLength(handle: handle, txOctets: txOctets, txTime: txTime).packet
    }
    /// HCI_LE_Set_PHY (7.8.49).
    public static func leSetPHY(_ p: LESetPHY) -> HCICommandPacket { p.packet }

    /// HCI_LE_Create_Connection parameters (7.8.12). Scan interval and window in 0.625 ms units.
    public struct LECreateConnection: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x200D)
        public var scanInterval: UInt16
        public var scanWindow: UInt16
        /// 0x00: use the peer address; 0x01: use the Filter Accept List.
        public var initiatorFilterPolicy: UInt8
        public var peerAddressType: UInt8
        public var peerAddress: BluetoothAddress
        public var ownAddressType: UInt8
        public var connection: LEConnectionParameters

        public init(scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060, initiatorFilterPolicy: UInt8 = 0,
                    peer: LEAddress, ownAddressType: UInt8 = 0, connection: LEConnectionParameters) {
            self.scanInterval = scanInterval
            self.scanWindow = scanWindow
            self.initiatorFilterPolicy = initiatorFilterPolicy
            self.peerAddressType = peer.type.rawValue
            self.peerAddress = peer.address
            self.ownAddressType = ownAddressType
            self.connection = connection
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Create_Connection")
            scanInterval = try r.u16(); scanWindow = try r.u16()
            initiatorFilterPolicy = try r.u8(); peerAddressType = try r.u8(); peerAddress = try r.address()
            ownAddressType = try r.u8()
            connection = try LEConnectionParameters(&r)
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.appendLE(scanInterval); out.appendLE(scanWindow)
            out.append(initiatorFilterPolicy); out.append(peerAddressType); out.appendLE(peerAddress)
            out.append(ownAddressType)
            connection.encode(into: &out)
        }
    }

    /// Per-PHY settings of HCI_LE_Extended_Create_Connection.
    public struct LEInitiatingPHYParameters: Hashable, Sendable {
        public var scanInterval: UInt16
        public var scanWindow: UInt16
        public var connection: LEConnectionParameters

        public init(scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060, connection: LEConnectionParameters) {
            self.scanInterval = scanInterval
            self.scanWindow = scanWindow
            self.connection = connection
        }
    }

    /// HCI_LE_Extended_Create_Connection [v1] parameters (7.8.66): the fixed fields, then
    /// Scan_Interval, Scan_Window and the connection parameters for each Initiating_PHYs bit
    /// (LE 1M, LE 2M, LE Coded in that order), interleaved per PHY.
    public struct LEExtendedCreateConnection: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2043)
        public var initiatorFilterPolicy: UInt8
        public var ownAddressType: UInt8
        public var peerAddressType: UInt8
        public var peerAddress: BluetoothAddress
        public var le1M: LEInitiatingPHYParameters?
        public var le2M: LEInitiatingPHYParameters?
        public var leCoded: LEInitiatingPHYParameters?

        public init(initiatorFilterPolicy: UInt8 = 0, ownAddressType: UInt8 = 0, peer: LEAddress,
                    le1M: LEInitiatingPHYParameters?, le2M: LEInitiatingPHYParameters? = nil,
                    leCoded: LEInitiatingPHYParameters? = nil) {
            self.initiatorFilterPolicy = initiatorFilterPolicy
            self.ownAddressType = ownAddressType
            self.peerAddressType = peer.type.rawValue
            self.peerAddress = peer.address
            self.le1M = le1M
            self.le2M = le2M
            self.leCoded = leCoded
        }

        /// The Initiating_PHYs bitfield.
        public var initiatingPHYs: UInt8 {
            (le1M != nil ? 0x01 : 0) | (le2M != nil ? 0x02 : 0) | (leCoded != nil ? 0x04 : 0)
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Extended_Create_Connection")
            initiatorFilterPolicy = try r.u8(); ownAddressType = try r.u8()
            peerAddressType = try r.u8(); peerAddress = try r.address()
            let phys = try r.u8()
            guard phys & ~0x07 == 0 else {
                throw .invalidValue(what: "HCI_LE_Extended_Create_Connection", field: "Initiating_PHYs", value: Int(phys))
            }
            func one(_ r: inout ByteReader) throws(DecodeError) -> LEInitiatingPHYParameters {
                let interval = try r.u16(), window = try r.u16()
                return LEInitiatingPHYParameters(scanInterval: interval, scanWindow: window, connection: try LEConnectionParameters(&r))
            }
            le1M = phys & 0x01 != 0 ? try one(&r) : nil
            le2M = phys & 0x02 != 0 ? try one(&r) : nil
            leCoded = phys & 0x04 != 0 ? try one(&r) : nil
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.append(initiatorFilterPolicy); out.append(ownAddressType)
            out.append(peerAddressType); out.appendLE(peerAddress); out.append(initiatingPHYs)
            for p in [le1M, le2M, leCoded] {
                guard let p else { continue }
                out.appendLE(p.scanInterval); out.appendLE(p.scanWindow)
                p.connection.encode(into: &out)
            }
        }
    }

    /// HCI_LE_Connection_Update parameters (7.8.18).
    public struct LEConnectionUpdate: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2013)
        public var handle: UInt16
        public var parameters: LEConnectionParameters

        public init(handle: UInt16, parameters: LEConnectionParameters) {
            self.handle = handle
            self.parameters = parameters
        }

        public init(parameters bytes: [UInt8]) throws(DecodeError) {
            var r = ByteReader(bytes, context: "HCI_LE_Connection_Update")
            handle = try r.u16()
            parameters = try LEConnectionParameters(&r)
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.appendLE(handle)
            parameters.encode(into: &out)
        }
    }

    /// HCI_LE_Remote_Connection_Parameter_Request_Reply parameters (7.8.31).
    public struct LERemoteConnectionParameterRequestReply: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2020)
        public var handle: UInt16
        public var parameters: LEConnectionParameters

        public init(handle: UInt16, parameters: LEConnectionParameters) {
            self.handle = handle
            self.parameters = parameters
        }

        public init(parameters bytes: [UInt8]) throws(DecodeError) {
            var r = ByteReader(bytes, context: "HCI_LE_Remote_Connection_Parameter_Request_Reply")
            handle = try r.u16()
            parameters = try LEConnectionParameters(&r)
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.appendLE(handle)
            parameters.encode(into: &out)
        }
    }

    /// HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply parameters (7.8.32).
    public struct LERemoteConnectionParameterRequestNegativeReply: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2021)
        public var handle: UInt16
        public var reason: HCIStatus

        public init(handle: UInt16, reason: HCIStatus) {
            self.handle = handle
            self.reason = reason
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply")
            handle = try r.u16(); reason = HCIStatus(rawValue: try r.u8())
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.appendLE(handle); out.append(reason.rawValue)
        }
    }

    /// HCI_LE_Set_Data_Length parameters (7.8.33). TX time in microseconds.
    public struct LESetDataLength: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2022)
        public var handle: UInt16
        public var txOctets: UInt16
        public var txTime: UInt16

        public init(handle: UInt16, txOctets: UInt16, txTime: UInt16) {
            self.handle = handle
            self.txOctets = txOctets
            self.txTime = txTime
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_Data_Length")
            handle = try r.u16(); txOctets = try r.u16(); txTime = try r.u16()
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.appendLE(handle); out.appendLE(txOctets); out.appendLE(txTime)
        }
    }

    /// HCI_LE_Set_PHY parameters (7.8.49). PHY bitfields: bit 0 LE 1M, bit 1 LE 2M, bit 2 LE Coded.
    public struct LESetPHY: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2032)
        public var handle: UInt16
        /// Bit 0: no TX preference; bit 1: no RX preference.
        public var allPHYs: UInt8
        public var txPHYs: UInt8
        public var rxPHYs: UInt8
        /// For LE Coded: 0 no preference, 1 S=2, 2 S=8.
        public var phyOptions: UInt16

        public init(handle: UInt16, allPHYs: UInt8 = 0, txPHYs: UInt8, rxPHYs: UInt8, phyOptions: UInt16 = 0) {
            self.handle = handle
            self.allPHYs = allPHYs
            self.txPHYs = txPHYs
            self.rxPHYs = rxPHYs
            self.phyOptions = phyOptions
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_PHY")
            handle = try r.u16(); allPHYs = try r.u8(); txPHYs = try r.u8(); rxPHYs = try r.u8()
            phyOptions = try r.u16()
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.appendLE(handle); out.append(allPHYs); out.append(txPHYs); out.append(rxPHYs); out.appendLE(phyOptions)
        }
    }
}
