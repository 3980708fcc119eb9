/// Extended advertising commands (Vol 4, Part E, 7.8.52 to 7.8.59): advertising sets with
/// their own parameters, data of up to the controller's maximum, and per-set duration and
/// event counts.
///
///     let p = HCICommand.LESetExtendedAdvertisingParameters(handle: 0, properties: .legacyConnectable)
extension HCICommand {
    /// HCI_LE_Set_Advertising_Set_Random_Address (7.8.52).
    public static func leSetAdvertisingSetRandomAddress(handle: UInt8, address: BluetoothAddress) -> HCICommandPacket {
        var p: [UInt8] = [handle]
        p.appendLE(address)
        return HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2035), parameters: p)
    }
    /// HCI_LE_Read_Maximum_Advertising_Data_Length (7.8.57).
    public static func leReadMaximumAdvertisingDataLength() -> HCICommandPacket { bare(0x203A) }
    /// HCI_LE_Read_Number_of_Supported_Advertising_Sets (7.8.58).
    public static func leReadNumberOfSupportedAdvertisingSets() -> HCICommandPacket { bare(0x203B) }
    /// HCI_LE_Remove_Advertising_Set (7.8.59).
    public static func leRemoveAdvertisingSet(handle: UInt8) -> HCICommandPacket {
        HCICommandPacket(opcode: HCIOpcode(rawValue: 0x203C), parameters: [handle])
    }

    /// Advertising_Event_Properties of HCI_LE_Set_Extended_Advertising_Parameters (7.8.53).
    public struct AdvertisingEventProperties: OptionSet, Hashable, Sendable {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let connectable = Self(rawValue: 1 << 0)
        public static let scannable = Self(rawValue: 1 << 1)
        public static let directed = Self(rawValue: 1 << 2)
        public static let highDutyCycleDirected = Self(rawValue: 1 << 3)
        /// Use legacy advertising PDUs (ADV_IND and friends, 31 octets at most).
        public static let legacy = Self(rawValue: 1 << 4)
        public static let anonymous = Self(rawValue: 1 << 5)
        public static let includeTxPower = Self(rawValue: 1 << 6)

        /// ADV_IND (0x0013), ADV_SCAN_IND (0x0012), ADV_NONCONN_IND (0x0010): Table 7.2 of 7.8.53.
        public static let legacyConnectable: Self = [.legacy, .connectable, .scannable]
        public static let legacyScannable: Self = [.legacy, .scannable]
        public static let legacyNonConnectable: Self = [.legacy]
    }

    /// HCI_LE_Set_Extended_Advertising_Parameters [v1] parameters (7.8.53). Intervals in
    /// 0.625 ms units (3 octets each), TX power in dBm (0x7F: no preference).
    public struct LESetExtendedAdvertisingParameters: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2036)
        public var handle: UInt8
        public var properties: AdvertisingEventProperties
        public var primaryIntervalMin: UInt32
        public var primaryIntervalMax: UInt32
        /// Bits 0..2: channels 37, 38, 39.
        public var primaryChannelMap: UInt8
        public var ownAddressType: UInt8
        public var peerAddressType: UInt8
        public var peerAddress: BluetoothAddress
        public var filterPolicy: UInt8
        public var txPower: Int8
        /// 0x01 LE 1M, 0x03 LE Coded.
        public var primaryPHY: UInt8
        public var secondaryMaxSkip: UInt8
        /// 0x01 LE 1M, 0x02 LE 2M, 0x03 LE Coded.
        public var secondaryPHY: UInt8
        public var sid: UInt8
        public var scanRequestNotification: Bool

        public init(handle: UInt8, properties: AdvertisingEventProperties, primaryIntervalMin: UInt32 = 0x0800,
                    primaryIntervalMax: UInt32 = 0x0800, primaryChannelMap: UInt8 = 0x07, ownAddressType: UInt8 = 0,
                    peerAddressType: UInt8 = 0, peerAddress: BluetoothAddress = .zero, filterPolicy: UInt8 = 0,
                    txPower: Int8 = 0x7F, primaryPHY: UInt8 = 1, secondaryMaxSkip: UInt8 = 0, secondaryPHY: UInt8 = 1,
                    sid: UInt8 = 0, scanRequestNotification: Bool = false) {
            self.handle = handle
            self.properties = properties
            self.primaryIntervalMin = primaryIntervalMin
            self.primaryIntervalMax = primaryIntervalMax
            self.primaryChannelMap = primaryChannelMap
            self.ownAddressType = ownAddressType
            self.peerAddressType = peerAddressType
            self.peerAddress = peerAddress
            self.filterPolicy = filterPolicy
            self.txPower = txPower
            self.primaryPHY = primaryPHY
            self.secondaryMaxSkip = secondaryMaxSkip
            self.secondaryPHY = secondaryPHY
            self.sid = sid
            self.scanRequestNotification = scanRequestNotification
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_Extended_Advertising_Parameters")
            handle = try r.u8(); properties = AdvertisingEventProperties(rawValue: try r.u16())
            primaryIntervalMin = try r.u24(); primaryIntervalMax = try r.u24()
            primaryChannelMap = try r.u8(); ownAddressType = try r.u8(); peerAddressType = try r.u8()
            peerAddress = try r.address(); filterPolicy = try r.u8(); txPower = try r.i8()
            primaryPHY = try r.u8(); secondaryMaxSkip = try r.u8(); secondaryPHY = try r.u8(); sid = try r.u8()
            scanRequestNotification = try r.bool("Scan_Request_Notification_Enable")
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.append(handle); out.appendLE(properties.rawValue)
            out.appendLE24(primaryIntervalMin); out.appendLE24(primaryIntervalMax)
            out.append(primaryChannelMap); out.append(ownAddressType); out.append(peerAddressType)
            out.appendLE(peerAddress); out.append(filterPolicy); out.appendLE(txPower)
            out.append(primaryPHY); out.append(secondaryMaxSkip); out.append(secondaryPHY); out.append(sid)
            out.append(scanRequestNotification ? 1 : 0)
        }
    }

    /// Operation of HCI_LE_Set_Extended_Advertising_Data / Scan_Response_Data (7.8.54, 7.8.55).
    public enum AdvertisingDataOperation: UInt8, Hashable, Sendable {
        case intermediateFragment = 0x00
        case firstFragment = 0x01
        case lastFragment = 0x02
        case complete = 0x03
        case unchanged = 0x04
    }

    /// HCI_LE_Set_Extended_Advertising_Data (7.8.54, opcode 0x2037) or
    /// HCI_LE_Set_Extended_Scan_Response_Data (7.8.55, opcode 0x2038) parameters: one
    /// fragment of at most 251 octets.
    public struct LESetExtendedAdvertisingData: Hashable, Sendable {
        /// Most data octets one command carries (Advertising_Data_Length is at most 251).
        public static let maximumFragmentLength = 251
        public var handle: UInt8
        public var operation: AdvertisingDataOperation
        /// 0x00: the controller may fragment; 0x01: it should not.
        public var fragmentPreference: UInt8
        public var data: [UInt8]

        public init(handle: UInt8, operation: AdvertisingDataOperation, fragmentPreference: UInt8 = 1, data: [UInt8]) {
            self.handle = handle
            self.operation = operation
            self.fragmentPreference = fragmentPreference
            self.data = Array(data.prefix(Self.maximumFragmentLength))
        }

        public init(parameters: [UInt8], context: StaticString = "HCI_LE_Set_Extended_Advertising_Data") throws(DecodeError) {
            var r = ByteReader(parameters, context: context)
            handle = try r.u8()
            let op = try r.u8()
            guard let operation = AdvertisingDataOperation(rawValue: op) else {
                throw .invalidValue(what: "\(context)", field: "Operation", value: Int(op))
            }
            self.operation = operation
            fragmentPreference = try r.u8()
            let length = Int(try r.u8())
            guard length <= Self.maximumFragmentLength else {
                throw .invalidValue(what: "\(context)", field: "Advertising_Data_Length", value: length)
            }
            data = try r.bytes(length)
            try r.expectEnd()
        }

        public var parameters: [UInt8] {
            var out: [UInt8] = [handle, operation.rawValue, fragmentPreference, UInt8(data.count)]
            out.append(contentsOf: data)
            return out
        }

        /// The commands that carry `data` for set `handle`: one `.complete` command when it
        /// fits in 251 octets (also for empty data), else first, intermediate and last fragments.
        ///
        ///     let packets = HCICommand.LESetExtendedAdvertisingData.fragments(handle: 0, data: payload, scanResponse: false)
        public static func fragments(handle: UInt8, data: [UInt8], scanResponse: Bool) -> [HCICommandPacket] {
            let opcode = HCIOpcode(rawValue: scanResponse ? 0x2038 : 0x2037)
            guard data.count > maximumFragmentLength else {
                return [HCICommandPacket(opcode: opcode, parameters: Self(handle: handle, operation: .complete, data: data).parameters)]
            }
            var packets: [HCICommandPacket] = []
            var start = 0
            while start < data.count {
                let end = min(start + maximumFragmentLength, data.count)
                let operation: AdvertisingDataOperation = start == 0 ? .firstFragment : end == data.count ? .lastFragment : .intermediateFragment
                packets.append(HCICommandPacket(opcode: opcode, parameters: Self(handle: handle, operation: operation, data: Array(data[start..<end])).parameters))
                start = end
            }
            return packets
        }
    }

    /// One set of HCI_LE_Set_Extended_Advertising_Enable (7.8.56). Duration in 10 ms units
    /// (0: until disabled), events 0: no limit.
    public struct AdvertisingSetEnable: Hashable, Sendable {
        public var handle: UInt8
        public var duration: UInt16
        public var maxExtendedAdvertisingEvents: UInt8

        public init(handle: UInt8, duration: UInt16 = 0, maxExtendedAdvertisingEvents: UInt8 = 0) {
            self.handle = handle
            self.duration = duration
            self.maxExtendedAdvertisingEvents = maxExtendedAdvertisingEvents
        }
    }

    /// HCI_LE_Set_Extended_Advertising_Enable parameters (7.8.56): Enable, Num_Sets, then the
    /// three arrays (handles, durations, event counts) one after the other.
    public struct LESetExtendedAdvertisingEnable: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2039)
        public var enable: Bool
        /// Empty with `enable` false: every set is disabled.
        public var sets: [AdvertisingSetEnable]

        public init(enable: Bool, sets: [AdvertisingSetEnable]) {
            self.enable = enable
            self.sets = Array(sets.prefix(0x3F))
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_Extended_Advertising_Enable")
            enable = try r.bool("Enable")
            let count = Int(try r.u8())
            guard count <= 0x3F else { throw .invalidValue(what: "HCI_LE_Set_Extended_Advertising_Enable", field: "Num_Sets", value: count) }
            try r.need(count * 4)
            var handles: [UInt8] = [], durations: [UInt16] = [], events: [UInt8] = []
            for _ in 0..<count { handles.append(try r.u8()) }
            for _ in 0..<count { durations.append(try r.u16()) }
            for _ in 0..<count { events.append(try r.u8()) }
            try r.expectEnd()
            sets = (0..<count).map { AdvertisingSetEnable(handle: handles[$0], duration: durations[$0], maxExtendedAdvertisingEvents: events[$0]) }
        }

        public func encode(into out: inout [UInt8]) {
            out.append(enable ? 1 : 0); out.append(UInt8(sets.count))
            for s in sets { out.append(s.handle) }
            for s in sets { out.appendLE(s.duration) }
            for s in sets { out.append(s.maxExtendedAdvertisingEvents) }
        }
    }
}

extension HCIReturn {
    /// HCI_LE_Set_Extended_Advertising_Parameters (7.8.53): Selected_TX_Power in dBm.
    package struct LESetExtendedAdvertisingParameters: HCIReturnParameters {
        package static let context: StaticString = "HCI_LE_Set_Extended_Advertising_Parameters return parameters"
        package var selectedTxPower: Int8
        package init(selectedTxPower: Int8) { self.selectedTxPower = selectedTxPower }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { selectedTxPower = try r.i8() }
    }

    /// HCI_LE_Read_Maximum_Advertising_Data_Length (7.8.57): 31 to 1650 octets.
    package struct LEReadMaximumAdvertisingDataLength: HCIReturnParameters {
        package static let context: StaticString = "HCI_LE_Read_Maximum_Advertising_Data_Length return parameters"
        package var maximumLength: UInt16
        package init(maximumLength: UInt16) { self.maximumLength = maximumLength }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { maximumLength = try r.u16() }
    }

    /// HCI_LE_Read_Number_of_Supported_Advertising_Sets (7.8.58).
    package struct LEReadNumberOfSupportedAdvertisingSets: HCIReturnParameters {
        package static let context: StaticString = "HCI_LE_Read_Number_of_Supported_Advertising_Sets return parameters"
        package var count: UInt8
        package init(count: UInt8) { self.count = count }
        package init(afterStatus r: inout ByteReader) throws(DecodeError) { count = try r.u8() }
    }
}

extension HCIEvent {
    /// HCI_LE_Advertising_Set_Terminated (7.7.65.18, subevent 0x12): the set stopped because
    /// a link was created on it (status 0x00), its duration ran out (0x3C Advertising Timeout)
    /// or it sent its maximum number of events (0x43 Limit Reached).
    public struct LEAdvertisingSetTerminated: Hashable, Sendable {
        public var status: HCIStatus
        public var advertisingHandle: UInt8
        /// The link created on the set (status 0x00 only).
        public var connectionHandle: UInt16
        public var completedExtendedAdvertisingEvents: UInt8

        public init(status: HCIStatus = .success, advertisingHandle: UInt8, connectionHandle: UInt16, completedExtendedAdvertisingEvents: UInt8 = 0) {
            self.status = status
            self.advertisingHandle = advertisingHandle
            self.connectionHandle = connectionHandle
            self.completedExtendedAdvertisingEvents = completedExtendedAdvertisingEvents
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8()); advertisingHandle = try r.u8()
            connectionHandle = try r.u16(); completedExtendedAdvertisingEvents = try r.u8()
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.append(advertisingHandle)
            out.appendLE(connectionHandle); out.append(completedExtendedAdvertisingEvents)
        }
    }
}
