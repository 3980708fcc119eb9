/// The LE features bitmap (Vol 6, Part B, 4.6), as LE Read Local Supported Features and
/// LE Read Remote Features Complete carry it.
///
///     if features.contains(.le2MPHY) { ... }; print(features.names)
public struct LEFeatures: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    @inlinable public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let leEncryption = Self(bit: 0)
    public static let connectionParametersRequestProcedure = Self(bit: 1)
    public static let extendedRejectIndication = Self(bit: 2)
    public static let peripheralInitiatedFeaturesExchange = Self(bit: 3)
    public static let lePing = Self(bit: 4)
    public static let leDataPacketLengthExtension = Self(bit: 5)
    public static let llPrivacy = Self(bit: 6)
    public static let extendedScanningFilterPolicies = Self(bit: 7)
    public static let le2MPHY = Self(bit: 8)
    public static let stableModulationIndexTransmitter = Self(bit: 9)
    public static let stableModulationIndexReceiver = Self(bit: 10)
    public static let leCodedPHY = Self(bit: 11)
    public static let leExtendedAdvertising = Self(bit: 12)
    public static let lePeriodicAdvertising = Self(bit: 13)
    public static let channelSelectionAlgorithm2 = Self(bit: 14)
    public static let lePowerClass1 = Self(bit: 15)
    public static let minimumNumberOfUsedChannelsProcedure = Self(bit: 16)
    public static let connectionCTERequest = Self(bit: 17)
    public static let connectionCTEResponse = Self(bit: 18)
    public static let connectionlessCTETransmitter = Self(bit: 19)
    public static let connectionlessCTEReceiver = Self(bit: 20)
    public static let antennaSwitchingDuringCTETransmission = Self(bit: 21)
    public static let antennaSwitchingDuringCTEReception = Self(bit: 22)
    public static let receivingConstantToneExtensions = Self(bit: 23)
    public static let periodicAdvertisingSyncTransferSender = Self(bit: 24)
    public static let periodicAdvertisingSyncTransferRecipient = Self(bit: 25)
    public static let sleepClockAccuracyUpdates = Self(bit: 26)
    public static let remotePublicKeyValidation = Self(bit: 27)
    public static let connectedIsochronousStreamCentral = Self(bit: 28)
    public static let connectedIsochronousStreamPeripheral = Self(bit: 29)
    public static let isochronousBroadcaster = Self(bit: 30)
    public static let synchronizedReceiver = Self(bit: 31)
    public static let connectedIsochronousStreamHostSupport = Self(bit: 32)
    public static let lePowerControlRequest = Self(bit: 33)
    public static let lePowerControlRequest2 = Self(bit: 34)
    public static let lePathLossMonitoring = Self(bit: 35)
    public static let periodicAdvertisingADISupport = Self(bit: 36)
    public static let connectionSubrating = Self(bit: 37)
    public static let connectionSubratingHostSupport = Self(bit: 38)
    public static let channelClassification = Self(bit: 39)
    public static let advertisingCodingSelection = Self(bit: 40)
    public static let advertisingCodingSelectionHostSupport = Self(bit: 41)
    public static let decisionBasedAdvertisingFiltering = Self(bit: 42)
    public static let periodicAdvertisingWithResponsesAdvertiser = Self(bit: 43)
    public static let periodicAdvertisingWithResponsesScanner = Self(bit: 44)
    public static let unsegmentedFramedMode = Self(bit: 45)
    public static let channelSounding = Self(bit: 46)
    public static let channelSoundingHostSupport = Self(bit: 47)

    @inlinable init(bit: Int) { rawValue = 1 << UInt64(bit) }

    /// Feature names by bit number, as the specification's table lists them.
    static let bitNames: [String] = [
        "LE Encryption", "Connection Parameters Request procedure", "Extended Reject Indication",
        "Peripheral-initiated Features Exchange", "LE Ping", "LE Data Packet Length Extension", "LL Privacy",
        "Extended Scanning Filter Policies", "LE 2M PHY", "Stable Modulation Index - Transmitter",
        "Stable Modulation Index - Receiver", "LE Coded PHY", "LE Extended Advertising", "LE Periodic Advertising",
        "Channel Selection Algorithm #2", "LE Power Class 1", "Minimum Number of Used Channels procedure",
        "Connection CTE Request", "Connection CTE Response", "Connectionless CTE Transmitter",
        "Connectionless CTE Receiver", "Antenna Switching During CTE Transmission (AoD)",
        "Antenna Switching During CTE Reception (AoA)", "Receiving Constant Tone Extensions",
        "Periodic Advertising Sync Transfer - Sender", "Periodic Advertising Sync Transfer - Recipient",
        "Sleep Clock Accuracy Updates", "Remote Public Key Validation", "Connected Isochronous Stream - Central",
        "Connected Isochronous Stream - Peripheral", "Isochronous Broadcaster", "Synchronized Receiver",
        "Connected Isochronous Stream (Host Support)", "LE Power Control Request", "LE Power Control Request",
        "LE Path Loss Monitoring", "Periodic Advertising ADI support", "Connection Subrating",
        "Connection Subrating (Host Support)", "Channel Classification", "Advertising Coding Selection",
        "Advertising Coding Selection (Host Support)", "Decision-Based Advertising Filtering",
        "Periodic Advertising with Responses - Advertiser", "Periodic Advertising with Responses - Scanner",
        "Unsegmented Framed Mode", "Channel Sounding", "Channel Sounding (Host Support)",
    ]

    /// Names of the set bits, lowest first; unnamed bits as "bit N".
    public var names: [String] {
        (0..<64).compactMap { bit in
            guard rawValue & (1 << UInt64(bit)) != 0 else { return nil }
            return bit < Self.bitNames.count ? Self.bitNames[bit] : "bit \(bit)"
        }
    }

    public var description: String { names.isEmpty ? "none" : names.joined(separator: ", ") }
}
