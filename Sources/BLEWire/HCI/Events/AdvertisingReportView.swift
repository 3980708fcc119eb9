/// One advertising report read in place from event bytes: no copy of the address or data.
/// Only valid inside the closure of `HCIEvent.forEachAdvertisingReport`.
///
///     try HCIEvent.forEachAdvertisingReport(h4: bytes) { report in
///         if report.rssi > -70 { seen(report.address, report.data) }
///     }
@_spi(Internals) public struct AdvertisingReportView {
    /// True for an extended report (subevent 0x0D), false for a legacy one (0x02).
    public let isExtended: Bool
    /// The raw Event_Type: the legacy 8-bit value, or the extended 16-bit bitfield.
    public let eventType: UInt16
    public let addressType: UInt8
    public let address: BluetoothAddress
    /// dBm; 127 means not available.
    public let rssi: Int8
    /// The advertising data (AD structures), pointing into the event bytes.
    public let data: UnsafeRawBufferPointer
    /// Where `data` lies within the LE Meta parameters (Subevent_Code at offset 0).
    public let dataRange: Range<Int>
    /// Extended reports only (for legacy reports: LE 1M, none, 0xFF, 127, 0).
    public let primaryPHY: UInt8
    public let secondaryPHY: UInt8
    public let advertisingSID: UInt8
    public let txPower: Int8
    public let periodicAdvertisingInterval: UInt16

    @inlinable
    init(isExtended: Bool, eventType: UInt16, addressType: UInt8, address: BluetoothAddress, rssi: Int8,
         data: UnsafeRawBufferPointer, dataRange: Range<Int>, primaryPHY: UInt8 = 1, secondaryPHY: UInt8 = 0,
         advertisingSID: UInt8 = 0xFF, txPower: Int8 = 127, periodicAdvertisingInterval: UInt16 = 0) {
        self.isExtended = isExtended
        self.eventType = eventType
        self.addressType = addressType
        self.address = address
        self.rssi = rssi
        self.data = data
        self.dataRange = dataRange
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.txPower = txPower
        self.periodicAdvertisingInterval = periodicAdvertisingInterval
    }

    /// The Event_Type as the extended report's bitfield (legacy types mapped by
    /// `ExtendedAdvertisingEventType(legacy:)`).
    @inlinable
    public var extendedEventType: ExtendedAdvertisingEventType {
        isExtended ? ExtendedAdvertisingEventType(rawValue: eventType)
                   : ExtendedAdvertisingEventType(legacy: UInt8(truncatingIfNeeded: eventType))
    }

    /// True when the advertiser accepts connections.
    @inlinable public var isConnectable: Bool { extendedEventType.contains(.connectable) }
}

extension HCIEvent {
    /// Calls `body` for each report of an LE Advertising Report (0x02) or LE Extended
    /// Advertising Report (0x0D), reading in place. `parameters` are the LE Meta event's
    /// parameters (Subevent_Code first). Other subevents have no reports: returns 0.
    /// Reports before a malformed one have already been delivered when the error is thrown.
    /// Extended reports whose data status says "incomplete" are delivered as they come;
    /// joining the fragments is the caller's job.
    ///
    ///     let n = try HCIEvent.forEachAdvertisingReport(in: raw) { print($0.address) }
    @inlinable @discardableResult
    @_spi(Internals) public static func forEachAdvertisingReport(in parameters: UnsafeRawBufferPointer,
                                                _ body: (AdvertisingReportView) -> Void) throws(DecodeError) -> Int {
        guard parameters.count >= 2 else {
            if parameters.count == 1, parameters[0] != LESubevent.advertisingReport,
               parameters[0] != LESubevent.extendedAdvertisingReport { return 0 }
            throw .truncated(what: "HCI_LE_Meta_Event", needed: 2 - parameters.count)
        }
        let subevent = parameters[0]
        let count = Int(parameters[1])
        let end = parameters.count
        var i = 2
        @inline(__always) func address(_ at: Int) -> BluetoothAddress {
            var v: UInt64 = 0
            for k in 0..<6 { v |= UInt64(parameters[at + k]) << (8 * UInt64(k)) }
            return BluetoothAddress(rawValue: v)
        }
        switch subevent {
        case LESubevent.advertisingReport:
            for _ in 0..<count {
                guard end - i >= 10 else { throw .truncated(what: "HCI_LE_Advertising_Report", needed: 10 - (end - i)) }
                let length = Int(parameters[i + 8])
                let dataStart = i + 9
                guard end - dataStart >= length + 1 else {
                    throw .truncated(what: "HCI_LE_Advertising_Report", needed: length + 1 - (end - dataStart))
                }
                let range = dataStart..<dataStart + length
                body(AdvertisingReportView(
                    isExtended: false, eventType: UInt16(parameters[i]), addressType: parameters[i + 1],
                    address: address(i + 2), rssi: Int8(bitPattern: parameters[dataStart + length]),
                    data: UnsafeRawBufferPointer(rebasing: parameters[range]), dataRange: range))
                i = dataStart + length + 1
            }
        case LESubevent.extendedAdvertisingReport:
            for _ in 0..<count {
                guard end - i >= 24 else { throw .truncated(what: "HCI_LE_Extended_Advertising_Report", needed: 24 - (end - i)) }
                let length = Int(parameters[i + 23])
                let dataStart = i + 24
                guard end - dataStart >= length else {
                    throw .truncated(what: "HCI_LE_Extended_Advertising_Report", needed: length - (end - dataStart))
                }
                let range = dataStart..<dataStart + length
                body(AdvertisingReportView(
                    isExtended: true, eventType: UInt16(parameters[i]) | UInt16(parameters[i + 1]) << 8,
                    addressType: parameters[i + 2], address: address(i + 3), rssi: Int8(bitPattern: parameters[i + 13]),
                    data: UnsafeRawBufferPointer(rebasing: parameters[range]), dataRange: range,
                    primaryPHY: parameters[i + 9], secondaryPHY: parameters[i + 10], advertisingSID: parameters[i + 11],
                    txPower: Int8(bitPattern: parameters[i + 12]),
                    periodicAdvertisingInterval: UInt16(parameters[i + 14]) | UInt16(parameters[i + 15]) << 8))
                i = dataStart + length
            }
        default:
            return 0
        }
        guard i == end else {
            throw .malformed(what: "HCI_LE_Meta_Event", detail: "\(end - i) unexpected trailing bytes after \(count) advertising reports")
        }
        return count
    }

    /// As `forEachAdvertisingReport(in:_:)`, for LE Meta parameters held in an array.
    @inlinable @discardableResult
    @_spi(Internals) public static func forEachAdvertisingReport(in parameters: [UInt8],
                                                _ body: (AdvertisingReportView) -> Void) throws(DecodeError) -> Int {
        let result: Result<Int, DecodeError> = parameters.withUnsafeBytes { raw in
            do throws(DecodeError) { return .success(try forEachAdvertisingReport(in: raw, body)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Straight from one complete H4 packet (indicator 0x04, event code, length, parameters):
    /// the scan hot path with no intermediate packet value. Packets that are not LE Meta
    /// events give 0; a length field that disagrees with the bytes is an error.
    ///
    ///     try HCIEvent.forEachAdvertisingReport(h4: buffer) { filter.offer($0) }
    @inlinable @discardableResult
    @_spi(Internals) public static func forEachAdvertisingReport(h4 packet: UnsafeRawBufferPointer,
                                                _ body: (AdvertisingReportView) -> Void) throws(DecodeError) -> Int {
        guard packet.count >= 3 else { throw .truncated(what: "HCI Event packet", needed: 3 - packet.count) }
        guard packet[0] == HCIPacketType.event.rawValue, packet[1] == Code.leMeta else { return 0 }
        let length = Int(packet[2])
        guard packet.count == 3 + length else {
            throw .malformed(what: "HCI Event packet", detail: "parameter length \(length) but \(packet.count - 3) bytes present")
        }
        return try forEachAdvertisingReport(in: UnsafeRawBufferPointer(rebasing: packet[3...]), body)
    }
}
