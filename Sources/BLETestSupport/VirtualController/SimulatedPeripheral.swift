import BLECore
import BLEWire

/// A device the virtual controller can see and connect to: its address, what it advertises,
/// how often (in virtual time), how strong it looks, and the ATT server behind its link.
///
///     let heart = SimulatedPeripheral(address: LEAddress("C0:11:22:33:44:55", type: .random)!,
///                                     advertisingData: AdvertisingData([.completeLocalName("HRM")]).bytes,
///                                     attServer: MyServer())
///     vc.addPeripheral(heart)
public struct SimulatedPeripheral: Sendable {
    public var address: LEAddress
    /// AD structures as sent on air (Core Spec Supplement, Part A). A legacy advertiser
    /// carries at most 31 octets; longer data is cut there in legacy reports.
    public var advertisingData: [UInt8]
    /// Sent in answer to an active scan; scannable advertisers only.
    public var scanResponseData: [UInt8]
    /// ADV_IND (connectable and scannable) when true; ADV_SCAN_IND or ADV_NONCONN_IND otherwise.
    public var isConnectable: Bool
    /// Advertises with extended advertising PDUs: visible only to an extended scan, and data
    /// may exceed 31 octets.
    public var usesExtendedAdvertising: Bool
    /// Time between advertising events, in virtual time.
    public var advertisingInterval: Duration
    /// TX power in dBm carried by extended reports; nil reports "not available" (127).
    public var txPower: Int8?
    /// RSSI in dBm of its reports and of HCI_Read_RSSI on its link.
    public var rssi: Int8
    /// The peer's LE features, reported by LE Read Remote Features.
    public var features: LEFeatures
    /// Answers the central's ATT PDUs on its link; nil drops them.
    public var attServer: (any SimulatedATTServer)?
    /// Shared by the copies of one device on several controllers: one link at a time.
    public var peripheralLink: PeripheralLink?

    public init(address: LEAddress, advertisingData: [UInt8] = [], scanResponseData: [UInt8] = [],
                isConnectable: Bool = true, usesExtendedAdvertising: Bool = false,
                advertisingInterval: Duration = .milliseconds(100), txPower: Int8? = nil, rssi: Int8 = -60,
                features: LEFeatures = [.leEncryption, .leDataPacketLengthExtension, .le2MPHY],
                attServer: (any SimulatedATTServer)? = nil, peripheralLink: PeripheralLink? = nil) {
        self.address = address
        self.advertisingData = advertisingData
        self.scanResponseData = scanResponseData
        self.isConnectable = isConnectable
        self.usesExtendedAdvertising = usesExtendedAdvertising
        self.advertisingInterval = advertisingInterval
        self.txPower = txPower
        self.rssi = rssi
        self.features = features
        self.attServer = attServer
        self.peripheralLink = peripheralLink
    }

    /// Scannable: connectable advertising, or any advertiser with a scan response.
    var isScannable: Bool { isConnectable || !scanResponseData.isEmpty }
}

/// One complete L2CAP basic-frame that crossed the virtual link (Vol 3, Part A, 3.1).
public struct L2CAPFrame: Sendable, Hashable, CustomStringConvertible {
    public var handle: UInt16
    public var channelID: UInt16
    public var payload: [UInt8]

    public init(handle: UInt16, channelID: UInt16, payload: [UInt8]) {
        self.handle = handle
        self.channelID = channelID
        self.payload = payload
    }

    public var description: String {
        "handle \(handle.hex) CID \(channelID.hex): \(payload.hexString())"
    }
}

/// A live link as the virtual controller sees it.
public struct VirtualConnection: Sendable, Hashable {
    public var handle: UInt16
    public var peer: LEAddress
    public var parameters: ConnectionParameters
    public var txPHY: LEPHY
    public var rxPHY: LEPHY
    public var dataLength: DataLength
    /// Host ACL packets received and not yet reported by Number Of Completed Packets.
    public var uncompletedPackets: Int
}

/// How a scripted command is answered instead of the normal way.
///
///     vc.answer(.leCreateConnection, with: .status(.commandDisallowed))
///     vc.answer(HCIOpcode(rawValue: 0x2016), with: .none, times: 1)   // the next LE Read Remote Features is never answered
public enum CommandAnswer: Sendable {
    /// No Command Complete or Command Status: the host's command timeout must fire.
    case none
    /// Fails with `status`, in a Command Status or Command Complete as the command uses.
    case status(HCIStatus)
    /// As an unknown command (0x01).
    case unknownCommand
    /// These event packets, in order (credits are taken from the controller's setting).
    case events(@Sendable (HCICommandPacket) -> [HCIEventPacket])

    /// LE Enable Encryption (0x2019) answered as a controller that encrypts the link: Command
    /// Status (Vol 4, Part E, 7.7.15), then Encryption Change v1 (7.7.8) enabled on the
    /// command's handle. The host then reads the key size (`Options.encryptionKeySize`).
    ///
    ///     vc.answer(HCIOpcode(rawValue: 0x2019), with: .encrypting)
    public static let encrypting = CommandAnswer.events { command in
        [HCIEventPacket(code: 0x0F, parameters: [0x00, 0x01, 0x19, 0x20]),
         HCIEventPacket(code: 0x08, parameters: [0x00] + command.parameters.prefix(2) + [0x01])]
    }
}

/// Why a virtual controller call could not be done, or a wait ended without its condition.
public enum VirtualControllerError: Error, Sendable, Equatable, CustomStringConvertible {
    case timeout(waitingFor: String, milliseconds: Int)
    case notConnected(LEAddress)
    case noTransport
    /// The task waiting for `waitingFor` was cancelled.
    case cancelled(waitingFor: String)
    /// `connectFromCentral` found no enabled connectable advertising set.
    case notAdvertising

    public var description: String {
        switch self {
        case .timeout(let what, let ms):
            return "the virtual controller did not see \(what) within \(ms) ms of real time; check that the stack sends it, or that virtual time was advanced"
        case .notConnected(let peer):
            return "the virtual controller has no link to \(peer); connect it first"
        case .noTransport:
            return "the virtual controller has no transport; call makeTransport() first"
        case .cancelled(let what):
            return "waiting for \(what) on the virtual controller was cancelled"
        case .notAdvertising:
            return "the virtual controller has no enabled connectable advertising set; start advertising first"
        }
    }
}
