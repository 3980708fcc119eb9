import BLECore
import BLEWire

extension VirtualController {
    /// How the virtual controller describes itself and behaves. Every field has a default that
    /// brings a `Central` up on a Bluetooth 5.4 controller with 251-byte LE ACL buffers.
    ///
    ///     var options = VirtualController.Options()
    ///     options.aclPacketLength = 27; options.aclPacketCount = 2   // forces fragmentation and back-pressure
    ///     let vc = VirtualController(options: options)
    public struct Options: Sendable {
        /// Where delayed work (advertising events, delayed completions) gets its time.
        public enum Time: Sendable, Hashable {
            /// A `ManualScheduler` shared with the stack under test: nothing happens until the
            /// test calls `advance(by:)`.
            case manual
            /// No clock: delayed events go out at once; each peripheral advertises once when a
            /// scan starts (or when it is added during a scan) and again on `advertiseNow()`.
            case immediate
        }

        /// The event that reports a new connection (Vol 4, Part E, 7.7.65.1, 7.7.65.10).
        public enum ConnectionCompleteEvent: Sendable, Hashable {
            case legacy, enhancedV1, enhancedV2
        }

        /// How an unknown opcode is answered (Vol 4, Part E, 4.5: Unknown HCI Command, 0x01).
        public enum UnknownCommandAnswer: Sendable, Hashable {
            case commandComplete, commandStatus
        }

        /// When Number Of Completed Packets returns the host's ACL buffers (Vol 4, Part E, 7.7.19).
        public enum PacketCompletion: Sendable, Hashable {
            /// As soon as each packet arrives.
            case immediate
            /// `delay` of virtual time after each packet arrives (at once in `.immediate` time).
            case after(Duration)
            /// Only when the test calls `completePackets()`: withholds the host's credits.
            case manual
        }

        public var time: Time = .manual
        public var hciVersion: HCIVersion = .v5_4
        public var hciSubversion: UInt16 = 0x0001
        public var lmpSubversion: UInt16 = 0x0001
        /// Company identifier reported by Read Local Version Information (0x05F1: The Linux Foundation).
        public var manufacturer: UInt16 = 0x05F1
        /// LE features of the controller (Vol 6, Part B, 4.6). `.leExtendedAdvertising` also
        /// makes it list and implement the extended scan and create-connection commands.
        public var leFeatures: LEFeatures = [.leEncryption, .leDataPacketLengthExtension, .le2MPHY]
        /// Implement and list HCI_LE_Read_Buffer_Size [v2] (0x2060).
        public var supportsReadBufferSizeV2 = false
        /// Encryption_Key_Size answered to HCI_Read_Encryption_Key_Size (0x1408), in octets.
        public var encryptionKeySize: UInt8 = 16
        /// LE_ACL_Data_Packet_Length reported to the host.
        public var aclPacketLength: UInt16 = 251
        /// Total_Num_LE_ACL_Data_Packets reported to the host.
        public var aclPacketCount: UInt8 = 8
        /// Num_HCI_Command_Packets in every Command Complete and Command Status. 0 makes the
        /// host hold its commands until `grantCommandCredits(_:)`.
        public var numHCICommandPackets: UInt8 = 1
        public var unknownCommandAnswer: UnknownCommandAnswer = .commandComplete
        public var connectionCompleteEvent: ConnectionCompleteEvent = .legacy
        /// Virtual time between the Command Status of a create-connection command and the
        /// connection's completion (zero: at once).
        public var connectionDelay: Duration = .zero
        public var packetCompletion: PacketCompletion = .immediate
        /// Largest ACL payload the controller sends to the host. Real controllers may exceed
        /// the size they advertise, so this is independent of `aclPacketLength`.
        public var controllerToHostFragmentSize = 27
        /// Largest data fragment per LE Extended Advertising Report; longer data goes out in
        /// several reports, all but the last with data status "incomplete, more data to come".
        public var extendedReportFragmentSize = 229
        /// Maximum TX/RX octets the link layer accepts for LE Set Data Length.
        public var maximumDataLength: UInt16 = 251
        /// Num_Supported_Advertising_Sets (7.8.58), with `.leExtendedAdvertising`.
        public var advertisingSets: UInt8 = 4
        /// Max_Advertising_Data_Length (7.8.57), with `.leExtendedAdvertising`.
        public var maximumAdvertisingDataLength: UInt16 = 1650
        /// Entries the Filter Accept List holds (LE Read Filter Accept List Size); an add past
        /// it fails with Memory Capacity Exceeded (0x07).
        public var filterAcceptListSize: UInt8 = 8
        /// Entries the resolving list holds (LE Read Resolving List Size), with `.llPrivacy`
        /// in `leFeatures`; an add past it fails with Memory Capacity Exceeded (0x07).
        public var resolvingListSize: UInt8 = 8
        /// Makes a resolvable private address from a local IRK (the `ah` function, Vol 3,
        /// Part H, 2.2.2, with a prand): how the controller makes the addresses of advertising
        /// sets with Own_Address_Type 0x02 or 0x03. Nil: it never makes one, and such sets use
        /// the public or the random address as if no entry matched.
        public var makeResolvablePrivateAddress: (@Sendable (UInt128) -> BluetoothAddress)?
        /// Whether the link layer initiates while it scans; false: a create-connection command
        /// sent while the scan runs gets Command Status with Command Disallowed (0x0C), and so
        /// does a scan enable while a connection attempt is pending, as on controllers whose LE
        /// Supported States lack the Scanning and Initiating combination.
        public var initiatesWhileScanning = true

        public init() {}
    }
}
