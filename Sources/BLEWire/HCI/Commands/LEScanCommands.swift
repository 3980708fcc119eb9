/// Scanning commands, legacy and extended (Vol 4, Part E, 7.8.10, 7.8.11, 7.8.64, 7.8.65).
extension HCICommand {
    /// HCI_LE_Set_Scan_Parameters (7.8.10).
    public static func leSetScanParameters(_ p: LESetScanParameters) -> HCICommandPacket { p.packet }
    /// HCI_LE_Set_Scan_Enable (7.8.11).
    public static func leSetScanEnable(_ p: LESetScanEnable) -> HCICommandPacket { p.packet }
    /// HCI_LE_Set_Extended_Scan_Parameters (7.8.64).
    public static func leSetExtendedScanParameters(_ p: LESetExtendedScanParameters) -> HCICommandPacket { p.packet }
    /// HCI_LE_Set_Extended_Scan_Enable (7.8.65).
    public static func leSetExtendedScanEnable(_ p: LESetExtendedScanEnable) -> HCICommandPacket { p.packet }

    /// HCI_LE_Set_Scan_Parameters parameters (7.8.10). Interval and window in 0.625 ms units.
    public struct LESetScanParameters: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x200B)
        /// 0x00 passive, 0x01 active.
        public var scanType: UInt8
        public var scanInterval: UInt16
        public var scanWindow: UInt16
        public var ownAddressType: UInt8
        public var filterPolicy: UInt8

        public init(scanType: UInt8 = 1, scanInterval: UInt16 = 0x0010, scanWindow: UInt16 = 0x0010,
                    ownAddressType: UInt8 = 0, filterPolicy: UInt8 = 0) {
            self.scanType = scanType
            self.scanInterval = scanInterval
            self.scanWindow = scanWindow
            self.ownAddressType = ownAddressType
            self.filterPolicy = filterPolicy
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_Scan_Parameters")
            scanType = try r.u8(); scanInterval = try r.u16(); scanWindow = try r.u16()
            ownAddressType = try r.u8(); filterPolicy = try r.u8()
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.append(scanType); out.appendLE(scanInterval); out.appendLE(scanWindow)
            out.append(ownAddressType); out.append(filterPolicy)
        }
    }

    /// HCI_LE_Set_Scan_Enable parameters (7.8.11): LE_Scan_Enable, Filter_Duplicates.
    public struct LESetScanEnable: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x200C)
        public var enable: Bool
        public var filterDuplicates: Bool

        public init(enable: Bool, filterDuplicates: Bool = false) {
            self.enable = enable
            self.filterDuplicates = filterDuplicates
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_Scan_Enable")
            enable = try r.bool("LE_Scan_Enable"); filterDuplicates = try r.bool("Filter_Duplicates")
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.append(enable ? 1 : 0); out.append(filterDuplicates ? 1 : 0)
        }
    }

    /// Per-PHY scan settings of HCI_LE_Set_Extended_Scan_Parameters.
    public struct LEScanPHYParameters: Hashable, Sendable {
        /// 0x00 passive, 0x01 active.
        public var scanType: UInt8
        public var scanInterval: UInt16
        public var scanWindow: UInt16

        public init(scanType: UInt8 = 1, scanInterval: UInt16 = 0x0010, scanWindow: UInt16 = 0x0010) {
            self.scanType = scanType
            self.scanInterval = scanInterval
            self.scanWindow = scanWindow
        }
    }

    /// HCI_LE_Set_Extended_Scan_Parameters parameters (7.8.64): Own_Address_Type,
    /// Scanning_Filter_Policy, Scanning_PHYs, then Scan_Type, Scan_Interval, Scan_Window for each
    /// PHY bit set (LE 1M first, then LE Coded), interleaved per PHY.
    public struct LESetExtendedScanParameters: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2041)
        public var ownAddressType: UInt8
        public var filterPolicy: UInt8
        /// Settings for the LE 1M primary PHY, if scanning on it.
        public var le1M: LEScanPHYParameters?
        /// Settings for the LE Coded primary PHY, if scanning on it.
        public var leCoded: LEScanPHYParameters?

        public init(ownAddressType: UInt8 = 0, filterPolicy: UInt8 = 0,
                    le1M: LEScanPHYParameters? = LEScanPHYParameters(), leCoded: LEScanPHYParameters? = nil) {
            self.ownAddressType = ownAddressType
            self.filterPolicy = filterPolicy
            self.le1M = le1M
            self.leCoded = leCoded
        }

        /// The Scanning_PHYs bitfield.
        public var scanningPHYs: UInt8 { (le1M != nil ? 0x01 : 0) | (leCoded != nil ? 0x04 : 0) }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_Extended_Scan_Parameters")
            ownAddressType = try r.u8(); filterPolicy = try r.u8()
            let phys = try r.u8()
            guard phys & ~0x05 == 0 else {
                throw .invalidValue(what: "HCI_LE_Set_Extended_Scan_Parameters", field: "Scanning_PHYs", value: Int(phys))
            }
            func one(_ r: inout ByteReader) throws(DecodeError) -> LEScanPHYParameters {
                LEScanPHYParameters(scanType: try r.u8(), scanInterval: try r.u16(), scanWindow: try r.u16())
            }
            le1M = phys & 0x01 != 0 ? try one(&r) : nil
            leCoded = phys & 0x04 != 0 ? try one(&r) : nil
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.append(ownAddressType); out.append(filterPolicy); out.append(scanningPHYs)
            for p in [le1M, leCoded] {
                guard let p else { continue }
                out.append(p.scanType); out.appendLE(p.scanInterval); out.appendLE(p.scanWindow)
            }
        }
    }

    /// HCI_LE_Set_Extended_Scan_Enable parameters (7.8.65). Duration in 10 ms units, period in 1.28 s units.
    public struct LESetExtendedScanEnable: HCICommandParameters {
        public static let opcode = HCIOpcode(rawValue: 0x2042)
        public var enable: Bool
        /// 0x00 off, 0x01 on, 0x02 on and reset each period.
        public var filterDuplicates: UInt8
        public var duration: UInt16
        public var period: UInt16

        public init(enable: Bool, filterDuplicates: UInt8 = 0, duration: UInt16 = 0, period: UInt16 = 0) {
            self.enable = enable
            self.filterDuplicates = filterDuplicates
            self.duration = duration
            self.period = period
        }

        public init(parameters: [UInt8]) throws(DecodeError) {
            var r = ByteReader(parameters, context: "HCI_LE_Set_Extended_Scan_Enable")
            enable = try r.bool("Enable"); filterDuplicates = try r.u8()
            duration = try r.u16(); period = try r.u16()
            try r.expectEnd()
        }

        public func encode(into out: inout [UInt8]) {
            out.append(enable ? 1 : 0); out.append(filterDuplicates); out.appendLE(duration); out.appendLE(period)
        }
    }
}
