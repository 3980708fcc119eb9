/// Advertising report entries of the LE Meta subevents 0x02, 0x0B and 0x0D
/// (Vol 4, Part E, 7.7.65.2, 7.7.65.11, 7.7.65.13). Array parameters are interleaved per report.
extension HCIEvent {
    /// One report of HCI_LE_Advertising_Report (7.7.65.2).
    public struct LEAdvertisingReport: Hashable, Sendable {
        /// 0x00 ADV_IND, 0x01 ADV_DIRECT_IND, 0x02 ADV_SCAN_IND, 0x03 ADV_NONCONN_IND, 0x04 SCAN_RSP.
        public var eventType: UInt8
        public var addressType: UInt8
        public var address: BluetoothAddress
        public var data: [UInt8]
        /// dBm; 127 means not available.
        public var rssi: Int8

        public init(eventType: UInt8, addressType: UInt8, address: BluetoothAddress, data: [UInt8], rssi: Int8) {
            self.eventType = eventType
            self.addressType = addressType
            self.address = address
            self.data = data
            self.rssi = rssi
        }

        /// Fixed octets per report besides the data.
        static let fixedSize = 10

        init(_ r: inout ByteReader) throws(DecodeError) {
            eventType = try r.u8(); addressType = try r.u8(); address = try r.address()
            data = try r.bytes(Int(try r.u8()))
            rssi = try r.i8()
        }

        func encode(into out: inout [UInt8]) {
            out.append(eventType); out.append(addressType); out.appendLE(address)
            out.append(UInt8(truncatingIfNeeded: data.count)); out.append(contentsOf: data)
            out.appendLE(rssi)
        }
    }

    /// One report of HCI_LE_Directed_Advertising_Report (7.7.65.11).
    public struct LEDirectedAdvertisingReport: Hashable, Sendable {
        /// 0x01 ADV_DIRECT_IND.
        public var eventType: UInt8
        public var addressType: UInt8
        public var address: BluetoothAddress
        public var directAddressType: UInt8
        public var directAddress: BluetoothAddress
        public var rssi: Int8

        public init(eventType: UInt8 = 1, addressType: UInt8, address: BluetoothAddress, directAddressType: UInt8,
                    directAddress: BluetoothAddress, rssi: Int8) {
            self.eventType = eventType
            self.addressType = addressType
            self.address = address
            self.directAddressType = directAddressType
            self.directAddress = directAddress
            self.rssi = rssi
        }

        static let size = 16

        init(_ r: inout ByteReader) throws(DecodeError) {
            eventType = try r.u8(); addressType = try r.u8(); address = try r.address()
            directAddressType = try r.u8(); directAddress = try r.address(); rssi = try r.i8()
        }

        func encode(into out: inout [UInt8]) {
            out.append(eventType); out.append(addressType); out.appendLE(address)
            out.append(directAddressType); out.appendLE(directAddress); out.appendLE(rssi)
        }
    }

    /// One report of HCI_LE_Extended_Advertising_Report (7.7.65.13).
    public struct LEExtendedAdvertisingReport: Hashable, Sendable {
        public var eventType: ExtendedAdvertisingEventType
        /// 0x00..0x03 as `LEAddressType`; 0xFF anonymous.
        public var addressType: UInt8
        public var address: BluetoothAddress
        /// 0x01 LE 1M, 0x03 LE Coded.
        public var primaryPHY: UInt8
        /// 0x00 none, 0x01 LE 1M, 0x02 LE 2M, 0x03 LE Coded.
        public var secondaryPHY: UInt8
        /// Advertising_SID; 0xFF when none.
        public var advertisingSID: UInt8
        /// dBm; 127 means not available.
        public var txPower: Int8
        /// dBm; 127 means not available.
        public var rssi: Int8
        /// In 1.25 ms units; 0 when there is no periodic advertising.
        public var periodicAdvertisingInterval: UInt16
        public var directAddressType: UInt8
        public var directAddress: BluetoothAddress
        public var data: [UInt8]

        public init(eventType: ExtendedAdvertisingEventType, addressType: UInt8, address: BluetoothAddress,
                    primaryPHY: UInt8 = 1, secondaryPHY: UInt8 = 0, advertisingSID: UInt8 = 0xFF, txPower: Int8 = 127,
                    rssi: Int8, periodicAdvertisingInterval: UInt16 = 0, directAddressType: UInt8 = 0,
                    directAddress: BluetoothAddress = .zero, data: [UInt8]) {
            self.eventType = eventType
            self.addressType = addressType
            self.address = address
            self.primaryPHY = primaryPHY
            self.secondaryPHY = secondaryPHY
            self.advertisingSID = advertisingSID
            self.txPower = txPower
            self.rssi = rssi
            self.periodicAdvertisingInterval = periodicAdvertisingInterval
            self.directAddressType = directAddressType
            self.directAddress = directAddress
            self.data = data
        }

        /// Fixed octets per report besides the data.
        static let fixedSize = 24

        init(_ r: inout ByteReader) throws(DecodeError) {
            eventType = ExtendedAdvertisingEventType(rawValue: try r.u16())
            addressType = try r.u8(); address = try r.address()
            primaryPHY = try r.u8(); secondaryPHY = try r.u8(); advertisingSID = try r.u8()
            txPower = try r.i8(); rssi = try r.i8(); periodicAdvertisingInterval = try r.u16()
            directAddressType = try r.u8(); directAddress = try r.address()
            data = try r.bytes(Int(try r.u8()))
        }

        func encode(into out: inout [UInt8]) {
            out.appendLE(eventType.rawValue); out.append(addressType); out.appendLE(address)
            out.append(primaryPHY); out.append(secondaryPHY); out.append(advertisingSID)
            out.appendLE(txPower); out.appendLE(rssi); out.appendLE(periodicAdvertisingInterval)
            out.append(directAddressType); out.appendLE(directAddress)
            out.append(UInt8(truncatingIfNeeded: data.count)); out.append(contentsOf: data)
        }
    }
}

/// Event_Type of an extended advertising report (Vol 4, Part E, 7.7.65.13): bits 0..4 are flags,
/// bits 5..6 the data status.
///
///     let t = ExtendedAdvertisingEventType(rawValue: 0x0013)   // connectable, scannable, legacy
public struct ExtendedAdvertisingEventType: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let connectable = Self(rawValue: 1 << 0)
    public static let scannable = Self(rawValue: 1 << 1)
    public static let directed = Self(rawValue: 1 << 2)
    public static let scanResponse = Self(rawValue: 1 << 3)
    public static let legacy = Self(rawValue: 1 << 4)

    /// Bits 5..6 of Event_Type.
    public enum DataStatus: UInt8, Sendable, Hashable {
        case complete = 0
        case incompleteMoreToCome = 1
        case incompleteTruncated = 2
        case reserved = 3
    }

    @inlinable public var dataStatus: DataStatus {
        DataStatus(rawValue: UInt8((rawValue >> 5) & 0b11)) ?? .reserved
    }

    @inlinable public init(_ flags: ExtendedAdvertisingEventType, dataStatus: DataStatus) {
        rawValue = flags.rawValue & 0x1F | UInt16(dataStatus.rawValue) << 5
    }

    /// A legacy report's Event_Type (7.7.65.2) as the bits 7.7.65.13 gives the legacy PDUs:
    /// ADV_IND 0x13, ADV_DIRECT_IND 0x15, ADV_SCAN_IND 0x12, ADV_NONCONN_IND 0x10 (also for
    /// reserved values), SCAN_RSP 0x1B.
    ///
    ///     ExtendedAdvertisingEventType(legacy: 0x00)   // connectable, scannable, legacy
    @inlinable public init(legacy eventType: UInt8) {
        switch eventType {
        case 0x00: rawValue = 0x13
        case 0x01: rawValue = 0x15
        case 0x02: rawValue = 0x12
        case 0x04: rawValue = 0x1B
        default: rawValue = 0x10
        }
    }

    public var description: String {
        var parts: [String] = []
        if contains(.connectable) { parts.append("connectable") }
        if contains(.scannable) { parts.append("scannable") }
        if contains(.directed) { parts.append("directed") }
        if contains(.scanResponse) { parts.append("scan response") }
        if contains(.legacy) { parts.append("legacy") }
        switch dataStatus {
        case .complete: break
        case .incompleteMoreToCome: parts.append("incomplete, more to come")
        case .incompleteTruncated: parts.append("incomplete, truncated")
        case .reserved: parts.append("reserved data status")
        }
        return parts.isEmpty ? "non-connectable" : parts.joined(separator: ", ")
    }
}
