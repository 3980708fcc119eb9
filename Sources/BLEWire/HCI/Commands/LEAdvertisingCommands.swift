/// Legacy advertising commands (Vol 4, Part E, 7.8.5 to 7.8.9), used by test peers.
extension HCICommand {
    /// HCI_LE_Set_Advertising_Parameters (7.8.5).
    public static func leSetAdvertisingParameters(_ p: LESetAdvertisingParameters) -> HCICommandPacket { p.packet }
    /// HCI_LE_Set_Advertising_Data (7.8.7): length, then 31 octets (unused ones zero).
    public static func leSetAdvertisingData(_ data: [UInt8]) -> HCICommandPacket { LESetAdvertisingData(data: data).packet }
    /// HCI_LE_Set_Scan_Response_Data (7.8.8): same layout as the advertising data.
    public static func leSetScanResponseData(_ data: [UInt8]) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2009), parameters: LESetAdvertisingData(data: data).parameters)
    }
    /// HCI_LE_Set_Advertising_Enable (7.8.9).
    public static func leSetAdvertisingEnable(_ enable: Bool) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x200A), parameters: [enable ? 1 : 0])
    }

    /// HCI_LE_Set_Advertising_Parameters parameters (7.8.5). Intervals in 0.625 ms units.
    public struct LESetAdvertisingParameters: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2006)
        public var intervalMin: UInt16
        public var intervalMax: UInt16
        /// 0x00 ADV_IND, 0x01 ADV_DIRECT_IND (high duty), 0x02 ADV_SCAN_IND, 0x03 ADV_NONCONN_IND, 0x04 ADV_DIRECT_IND (low duty).
        public var advertisingType: UInt8
        public var ownAddressType: UInt8
        public var peerAddressType: UInt8
        public var peerAddress: BluetoothAddress
        /// Bits 0..2: channels 37, 38, 39.
        public var channelMap: UInt8
        public var filterPolicy: UInt8

        public init(intervalMin: UInt16 = 0x0800, intervalMax: UInt16 = 0x0800, advertisingType: UInt8 = 0,
                    ownAddressType: UInt8 = 0, peerAddressType: UInt8 = 0, peerAddress: BluetoothAddress = .zero,
                    channelMap: UInt8 = 0x07, filterPolicy: UInt8 = 0) {
            self.intervalMin = intervalMin
            self.intervalMax = intervalMax
            self.advertisingType = advertisingType
            self.ownAddressType = ownAddressType
            self.peerAddressType = peerAddressType
            self.peerAddress = peerAddress
            self.channelMap = channelMap
            self.filterPolicy = filterPolicy
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_Advertising_Parameters")
            intervalMin = try r.u16(); intervalMax = try r.u16()
            advertisingType = try r.u8(); ownAddressType = try r.u8(); peerAddressType = try r.u8()
            peerAddress = try r.address(); channelMap = try r.u8(); filterPolicy = try r.u8()
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.appendLE(intervalMin); out.appendLE(intervalMax)
            out.append(advertisingType); out.append(ownAddressType); out.append(peerAddressType)
            out.appendLE(peerAddress); out.append(channelMap); out.append(filterPolicy)
        }
    }

    /// HCI_LE_Set_Advertising_Data / HCI_LE_Set_Scan_Response_Data parameters (7.8.7, 7.8.8):
    /// Data_Length then 31 octets. Data beyond 31 octets is cut; decoding keeps the first
    /// Data_Length octets (the padding is not significant).
    public struct LESetAdvertisingData: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2008)
        public var data: [UInt8]

        public init(data: [UInt8]) { self.data = Array(data.prefix(31)) }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_Advertising_Data")
            let length = Int(try r.u8())
            guard length <= 31 else { throw .invalidValue(what: "HCI_LE_Set_Advertising_Data", field: "Data_Length", value: length) }
            let all = try r.bytes(31)
            try r.expectEnd()
            data = Array(all[0..<length])
        }

        public func encode(into out: inout [UInt8]) {
            out.append(UInt8(data.count))
            out.append(contentsOf: data)
            out.append(contentsOf: repeatElement(0, count: 31 - data.count))
        }
    }
}
