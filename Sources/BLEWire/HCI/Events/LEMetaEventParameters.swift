/// Parameters of LE Meta subevents (Vol 4, Part E, 7.7.65), without the Subevent_Code.
extension HCIEvent {
    /// HCI_LE_Connection_Complete (7.7.65.1). Interval in 1.25 ms units, timeout in 10 ms units.
    public struct LEConnectionComplete: Hashable, Sendable {
        public var status: HCIStatus
        public var handle: UInt16
        /// 0x00 Central, 0x01 Peripheral.
        public var role: UInt8
        public var peerAddressType: UInt8
        public var peerAddress: BluetoothAddress
        public var connectionInterval: UInt16
        public var peripheralLatency: UInt16
        public var supervisionTimeout: UInt16
        public var centralClockAccuracy: UInt8

        public init(status: HCIStatus = .success, handle: UInt16, role: UInt8 = 0, peerAddressType: UInt8,
                    peerAddress: BluetoothAddress, connectionInterval: UInt16, peripheralLatency: UInt16 = 0,
                    supervisionTimeout: UInt16, centralClockAccuracy: UInt8 = 0) {
            self.status = status
            self.handle = handle
            self.role = role
            self.peerAddressType = peerAddressType
            self.peerAddress = peerAddress
            self.connectionInterval = connectionInterval
            self.peripheralLatency = peripheralLatency
            self.supervisionTimeout = supervisionTimeout
            self.centralClockAccuracy = centralClockAccuracy
        }

        /// The peer as an `LEAddress`, if the type is one of the four defined.
        public var peer: LEAddress? { LEAddressType(rawValue: peerAddressType).map { LEAddress(peerAddress, type: $0) } }

        init(_ r: inout ByteReader) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8()); handle = try r.u16(); role = try r.u8()
            peerAddressType = try r.u8(); peerAddress = try r.address()
            connectionInterval = try r.u16(); peripheralLatency = try r.u16(); supervisionTimeout = try r.u16()
            centralClockAccuracy = try r.u8()
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.appendLE(handle); out.append(role)
            out.append(peerAddressType); out.appendLE(peerAddress)
            out.appendLE(connectionInterval); out.appendLE(peripheralLatency); out.appendLE(supervisionTimeout)
            out.append(centralClockAccuracy)
        }
    }

    /// HCI_LE_Enhanced_Connection_Complete [v1] (7.7.65.10, subevent 0x0A) and [v2]
    /// (subevent 0x29, adds Advertising_Handle and Sync_Handle).
    public struct LEEnhancedConnectionComplete: Hashable, Sendable {
        public var status: HCIStatus
        public var handle: UInt16
        public var role: UInt8
        public var peerAddressType: UInt8
        public var peerAddress: BluetoothAddress
        public var localResolvablePrivateAddress: BluetoothAddress
        public var peerResolvablePrivateAddress: BluetoothAddress
        public var connectionInterval: UInt16
        public var peripheralLatency: UInt16
        public var supervisionTimeout: UInt16
        public var centralClockAccuracy: UInt8
        /// [v2] fields; nil for the v1 subevent.
        public var advertisingHandle: UInt8?
        public var syncHandle: UInt16?

        public init(status: HCIStatus = .success, handle: UInt16, role: UInt8 = 0, peerAddressType: UInt8,
                    peerAddress: BluetoothAddress, localResolvablePrivateAddress: BluetoothAddress = .zero,
                    peerResolvablePrivateAddress: BluetoothAddress = .zero, connectionInterval: UInt16,
                    peripheralLatency: UInt16 = 0, supervisionTimeout: UInt16, centralClockAccuracy: UInt8 = 0,
                    advertisingHandle: UInt8? = nil, syncHandle: UInt16? = nil) {
            self.status = status
            self.handle = handle
            self.role = role
            self.peerAddressType = peerAddressType
            self.peerAddress = peerAddress
            self.localResolvablePrivateAddress = localResolvablePrivateAddress
            self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
            self.connectionInterval = connectionInterval
            self.peripheralLatency = peripheralLatency
            self.supervisionTimeout = supervisionTimeout
            self.centralClockAccuracy = centralClockAccuracy
            self.advertisingHandle = advertisingHandle
            self.syncHandle = syncHandle
        }

        /// True when this is the v2 subevent (0x29).
        public var isV2: Bool { advertisingHandle != nil || syncHandle != nil }

        /// The peer as an `LEAddress`, if the type is one of the four defined.
        public var peer: LEAddress? { LEAddressType(rawValue: peerAddressType).map { LEAddress(peerAddress, type: $0) } }

        init(_ r: inout ByteReader, v2: Bool) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8()); handle = try r.u16(); role = try r.u8()
            peerAddressType = try r.u8(); peerAddress = try r.address()
            localResolvablePrivateAddress = try r.address(); peerResolvablePrivateAddress = try r.address()
            connectionInterval = try r.u16(); peripheralLatency = try r.u16(); supervisionTimeout = try r.u16()
            centralClockAccuracy = try r.u8()
            if v2 {
                advertisingHandle = try r.u8()
                syncHandle = try r.u16()
            } else {
                advertisingHandle = nil
                syncHandle = nil
            }
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.appendLE(handle); out.append(role)
            out.append(peerAddressType); out.appendLE(peerAddress)
            out.appendLE(localResolvablePrivateAddress); out.appendLE(peerResolvablePrivateAddress)
            out.appendLE(connectionInterval); out.appendLE(peripheralLatency); out.appendLE(supervisionTimeout)
            out.append(centralClockAccuracy)
            if isV2 {
                out.append(advertisingHandle ?? 0xFF)
                out.appendLE(syncHandle ?? 0xFFFF)
            }
        }
    }

    /// HCI_LE_Connection_Update_Complete (7.7.65.3).
    public struct LEConnectionUpdateComplete: Hashable, Sendable {
        public var status: HCIStatus
        public var handle: UInt16
        public var connectionInterval: UInt16
        public var peripheralLatency: UInt16
        public var supervisionTimeout: UInt16

        public init(status: HCIStatus = .success, handle: UInt16, connectionInterval: UInt16,
                    peripheralLatency: UInt16 = 0, supervisionTimeout: UInt16) {
            self.status = status
            self.handle = handle
            self.connectionInterval = connectionInterval
            self.peripheralLatency = peripheralLatency
            self.supervisionTimeout = supervisionTimeout
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8()); handle = try r.u16()
            connectionInterval = try r.u16(); peripheralLatency = try r.u16(); supervisionTimeout = try r.u16()
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.appendLE(handle)
            out.appendLE(connectionInterval); out.appendLE(peripheralLatency); out.appendLE(supervisionTimeout)
        }
    }

    /// HCI_LE_Read_Remote_Features_Complete (7.7.65.4).
    public struct LEReadRemoteFeaturesComplete: Hashable, Sendable {
        public var status: HCIStatus
        public var handle: UInt16
        public var features: LEFeatures

        public init(status: HCIStatus = .success, handle: UInt16, features: LEFeatures) {
            self.status = status
            self.handle = handle
            self.features = features
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8()); handle = try r.u16()
            features = LEFeatures(rawValue: try r.u64())
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.appendLE(handle); out.appendLE(features.rawValue)
        }
    }

    /// HCI_LE_Long_Term_Key_Request (7.7.65.5).
    public struct LELongTermKeyRequest: Hashable, Sendable {
        public var handle: UInt16
        public var random: UInt64
        public var ediv: UInt16

        public init(handle: UInt16, random: UInt64, ediv: UInt16) {
            self.handle = handle
            self.random = random
            self.ediv = ediv
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            handle = try r.u16(); random = try r.u64(); ediv = try r.u16()
        }

        func encode(into out: inout [UInt8]) {
            out.appendLE(handle); out.appendLE(random); out.appendLE(ediv)
        }
    }

    /// HCI_LE_Remote_Connection_Parameter_Request (7.7.65.6).
    public struct LERemoteConnectionParameterRequest: Hashable, Sendable {
        public var handle: UInt16
        public var intervalMin: UInt16
        public var intervalMax: UInt16
        public var maxLatency: UInt16
        public var timeout: UInt16

        public init(handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16, timeout: UInt16) {
            self.handle = handle
            self.intervalMin = intervalMin
            self.intervalMax = intervalMax
            self.maxLatency = maxLatency
            self.timeout = timeout
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            handle = try r.u16(); intervalMin = try r.u16(); intervalMax = try r.u16()
            maxLatency = try r.u16(); timeout = try r.u16()
        }

        func encode(into out: inout [UInt8]) {
            out.appendLE(handle); out.appendLE(intervalMin); out.appendLE(intervalMax)
            out.appendLE(maxLatency); out.appendLE(timeout)
        }
    }

    /// HCI_LE_Data_Length_Change (7.7.65.7). Times in microseconds.
    public struct LEDataLengthChange: Hashable, Sendable {
        public var handle: UInt16
        public var maxTxOctets: UInt16
        public var maxTxTime: UInt16
        public var maxRxOctets: UInt16
        public var maxRxTime: UInt16

        public init(handle: UInt16, maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16) {
            self.handle = handle
            self.maxTxOctets = maxTxOctets
            self.maxTxTime = maxTxTime
            self.maxRxOctets = maxRxOctets
            self.maxRxTime = maxRxTime
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            handle = try r.u16(); maxTxOctets = try r.u16(); maxTxTime = try r.u16()
            maxRxOctets = try r.u16(); maxRxTime = try r.u16()
        }

        func encode(into out: inout [UInt8]) {
            out.appendLE(handle); out.appendLE(maxTxOctets); out.appendLE(maxTxTime)
            out.appendLE(maxRxOctets); out.appendLE(maxRxTime)
        }
    }

    /// HCI_LE_PHY_Update_Complete (7.7.65.12). PHY: 0x01 LE 1M, 0x02 LE 2M, 0x03 LE Coded.
    public struct LEPHYUpdateComplete: Hashable, Sendable {
        public var status: HCIStatus
        public var handle: UInt16
        public var txPHY: UInt8
        public var rxPHY: UInt8

        public init(status: HCIStatus = .success, handle: UInt16, txPHY: UInt8, rxPHY: UInt8) {
            self.status = status
            self.handle = handle
            self.txPHY = txPHY
            self.rxPHY = rxPHY
        }

        init(_ r: inout ByteReader) throws(DecodeError) {
            status = HCIStatus(rawValue: try r.u8()); handle = try r.u16(); txPHY = try r.u8(); rxPHY = try r.u8()
        }

        func encode(into out: inout [UInt8]) {
            out.append(status.rawValue); out.appendLE(handle); out.append(txPHY); out.append(rxPHY)
        }
    }
}
