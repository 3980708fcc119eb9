/// Parameters of events other than LE Meta (Vol 4, Part E, 7.7).
extension HCIEvent {
    /// HCI_Command_Complete (7.7.14): the return parameters stay raw; decode them with the
    /// return-parameter types (`HCIReturn.ReadLocalVersionInformation`...).
    public struct CommandComplete: Hashable, Sendable {
        public var numHCICommandPackets: UInt8
        public var opcode: HCIOpcode
        public var returnParameters: [UInt8]

        public init(numHCICommandPackets: UInt8 = 1, opcode: HCIOpcode, returnParameters: [UInt8]) {
            self.numHCICommandPackets = numHCICommandPackets
            self.opcode = opcode
            self.returnParameters = returnParameters
        }

        /// The first return parameter, which is Status for almost every command; nil if empty.
        public var status: HCIStatus? { returnParameters.first.map(HCIStatus.init(rawValue:)) }

        init(_ r: inout ByteReader) throws(DecodeError) {
            numHCICommandPackets = try r.u8()
            opcode = HCIOpcode(rawValue: try r.u16())
            returnParameters = r.rest()
        }

        func encode(into out: inout [UInt8]) {
            out.append(numHCICommandPackets); out.appendLE(opcode.rawValue); out.append(contentsOf: returnParameters)
        }
    }

    /// HCI_Command_Status (7.7.15).
    public struct CommandStatus: Hashable, Sendable {
        public var status: HCIStatus
        public var numHCICommandPackets: UInt8
        public var opcode: HCIOpcode

        public init(status: HCIStatus, numHCICommandPackets: UInt8 = 1, opcode: HCIOpcode) {
            self.status = status
            self.numHCICommandPackets = numHCICommandPackets
            self.opcode = opcode
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8())
            numHCICommandPackets = try r.u8()
            opcode = HCIOpcode(rawValue: try r.u16())
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.append(numHCICommandPackets); out.appendLE(opcode.rawValue)
        }
    }

    /// HCI_Disconnection_Complete (7.7.5).
    public struct DisconnectionComplete: Hashable, Sendable {
        public var status: HCIStatus
        public var handle: UInt16
        public var reason: HCIStatus

        public init(status: HCIStatus = .success, handle: UInt16, reason: HCIStatus) {
            self.status = status
            self.handle = handle
            self.reason = reason
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8())
            handle = try r.u16()
            reason = HCIStatus(rawValue: try r.u8())
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.appendLE(handle); out.append(reason.rawValue)
        }
    }

    /// One entry of HCI_Number_Of_Completed_Packets (7.7.19).
    public struct CompletedPackets: Hashable, Sendable {
        public var handle: UInt16
        public var count: UInt16

        public init(handle: UInt16, count: UInt16) {
            self.handle = handle
            self.count = count
        }
    }

    /// HCI_Encryption_Change [v1] (7.7.8, event 0x08) and [v2] (7.7.8, event 0x59, adds the key size).
    public struct EncryptionChange: Hashable, Sendable {
        public var status: HCIStatus
        public var handle: UInt16
        /// 0x00 off; 0x01 on (E0 on BR/EDR, AES-CCM on LE); 0x02 AES-CCM on BR/EDR.
        public var encryptionEnabled: UInt8
        /// Encryption_Key_Size of the v2 event; nil for the v1 event.
        public var keySize: UInt8?

        public init(status: HCIStatus = .success, handle: UInt16, encryptionEnabled: UInt8, keySize: UInt8? = nil) {
            self.status = status
            self.handle = handle
            self.encryptionEnabled = encryptionEnabled
            self.keySize = keySize
        }

        init(_ r: inout ByteReader, v2: Bool) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8())
            handle = try r.u16()
            encryptionEnabled = try r.u8()
            keySize = v2 ? try r.u8() : nil
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.appendLE(handle); out.append(encryptionEnabled)
            if let keySize { out.append(keySize) }
        }
    }

    /// HCI_Read_Remote_Version_Information_Complete (7.7.12).
    public struct ReadRemoteVersionInformationComplete: Hashable, Sendable {
        public var status: HCIStatus
        public var handle: UInt16
        /// LMP / LL version (same numbering as `HCIVersion`).
        public var version: HCIVersion
        public var companyIdentifier: UInt16
        public var subversion: UInt16

        public init(status: HCIStatus = .success, handle: UInt16, version: HCIVersion, companyIdentifier: UInt16, subversion: UInt16) {
            self.status = status
            self.handle = handle
            self.version = version
            self.companyIdentifier = companyIdentifier
            self.subversion = subversion
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8())
            handle = try r.u16()
            version = HCIVersion(rawValue: try r.u8())
            companyIdentifier = try r.u16()
            subversion = try r.u16()
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.appendLE(handle); out.append(version.rawValue)
            out.appendLE(companyIdentifier); out.appendLE(subversion)
        }
    }
}
