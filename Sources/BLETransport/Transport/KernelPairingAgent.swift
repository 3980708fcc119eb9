#if canImport(Glibc)
import Glibc
#endif
import CHCI
import Dispatch
import Synchronization
import BLEWire

/// Answers the kernel's pairing questions on adapter hciN while it is open, as bluetoothd's
/// agent does. When the kernel pairs (BT_SECURITY on one of its sockets) it asks user space on
/// its management interface: to confirm Just Works (User Confirmation Request, Confirm_Hint
/// 1) or a numeric comparison (Confirm_Hint 0, with the value), for the passkey the peer shows
/// (User Passkey Request), or to show the passkey it made up (Passkey Notify). The pairing
/// waits, at most SMP's 30 s, for the answer; without bluetoothd nothing gives it. `answer`
/// decides; the default confirms Just Works and refuses the rest. `ioCapability` is what the
/// kernel tells the peer a person can do (the kernel starts as no input, no output, which
/// gives Just Works only: BT_SECURITY high needs more). Needs CAP_NET_ADMIN.
///
///     let agent = try KernelPairingAgent(index: 0, ioCapability: .keyboardDisplay) { question in
///         if case .passkey = question { return .passkey(askThePerson()) }
///         return question.isJustWorks ? .confirm : .refuse
///     }
///     let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: peer, security: .authenticated, executor: executor)
///     agent.close()
public final class KernelPairingAgent: Sendable {
    /// What the kernel tells the peer a person can do here (management Set IO Capability;
    /// the values of SMP's IO Capability, Vol 3, Part H, 3.5.1).
    public enum IOCapability: UInt8, Sendable {
        case displayOnly = 0x00
        case displayYesNo = 0x01
        case keyboardOnly = 0x02
        case noInputNoOutput = 0x03
        case keyboardDisplay = 0x04
    }

    /// One question of the kernel's Security Manager about pairing with `peer`.
    public enum Question: Sendable, Hashable {
        /// Just Works: go ahead? (User Confirmation Request, Confirm_Hint 1)
        case justWorks(peer: LEAddress)
        /// Numeric Comparison: does the peer show `value` (six digits)? (Confirm_Hint 0)
        case numericComparison(peer: LEAddress, value: UInt32)
        /// Passkey Entry: the six digits the peer shows (User Passkey Request).
        case passkey(peer: LEAddress)
        /// Passkey Entry: show `passkey` for the person to type on the peer (Passkey Notify).
        /// The kernel needs no answer; it is asked again, with `entered`, as the peer reports
        /// keypresses.
        case displayPasskey(peer: LEAddress, passkey: UInt32, entered: UInt8)

        /// True for `.justWorks`.
        public var isJustWorks: Bool { if case .justWorks = self { true } else { false } }
    }

    /// The answer to a `Question`.
    public enum Answer: Sendable, Hashable {
        /// Yes (User Confirmation Reply).
        case confirm
        /// No: the kernel ends the pairing (User Confirmation / Passkey Negative Reply).
        case refuse
        /// The passkey typed (User Passkey Reply); for a confirmation it counts as `.confirm`.
        case passkey(UInt32)
    }

    /// A key the kernel announced after a pairing (New Long Term Key event). `persistent`
    /// (Store_Hint 1) means the kernel bonded and keeps the key for later connections.
    public struct LongTermKey: Sendable, Hashable {
        public var peer: LEAddress
        public var persistent: Bool
        /// True when the pairing was MITM-protected (Key_Type 0x01 or 0x03).
        public var authenticated: Bool
        /// True for a key from LE Secure Connections (Key_Type 0x02 to 0x04).
        public var secureConnections: Bool
        /// Encryption key size in octets (7 to 16).
        public var keySize: Int
    }

    /// The default answer: Just Works yes, everything else no.
    public static let justWorksOnly: @Sendable (Question) async -> Answer = { $0.isJustWorks ? .confirm : .refuse }

    /// The adapter index whose questions are answered.
    public let index: Int
    /// The management channel's read source: set once in init, taken only to cancel it.
    private let source: Mutex<any DispatchSourceRead>
    private final class Log: Sendable {
        let questions = Mutex<[Question]>([])
        let keys = Mutex<[LongTermKey]>([])
        /// Set by close(): once set, nothing is sent on the socket.
        let closed = Mutex(false)
    }
    private let log = Log()

    /// Every question the kernel asked so far, in order.
    public var questions: [Question] { log.questions.withLock { $0 } }
    /// Every key the kernel announced so far, in order.
    public var keys: [LongTermKey] { log.keys.withLock { $0 } }

    /// Event and command codes of the management interface (BlueZ doc/mgmt-api.txt).
    enum Code {
        static let newLongTermKey: UInt16 = 0x000A
        static let userConfirmationRequest: UInt16 = 0x000F
        static let userPasskeyRequest: UInt16 = 0x0010
        static let passkeyNotify: UInt16 = 0x0017
        static let userConfirmationReply: UInt16 = 0x001C
        static let userConfirmationNegativeReply: UInt16 = 0x001D
        static let userPasskeyReply: UInt16 = 0x001E
        static let userPasskeyNegativeReply: UInt16 = 0x001F
    }

    /// Sets the adapter's IO capability and starts answering on the management interface.
    /// The IO capability stays set after `close()`.
    public init(index: Int, ioCapability: IOCapability = .noInputNoOutput,
                answer: @escaping @Sendable (Question) async -> Answer = KernelPairingAgent.justWorksOnly) throws(TransportError) {
        self.index = index
        try HCIAdapters.setIOCapability(ioCapability, index: index)
        let fd = try HCIAdapters.openManagementSocket(device: "hci\(index)")
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            let err = errno
            _ = Glibc.close(fd)
            throw .system(operation: "fcntl(O_NONBLOCK) on the management channel", endpoint: "hci\(index)", errno: err)
        }
        let queue = DispatchQueue(label: "kernel-pairing-agent.hci\(index)")
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        let log = self.log
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                switch Self.event(buffer[..<n], index: index) {
                case .key(let key)?:
                    log.keys.withLock { $0.append(key) }
                case .question(let question)?:
                    log.questions.withLock { $0.append(question) }
                    if case .displayPasskey = question { Task { _ = await answer(question) }; continue }
                    Task {
                        let reply = Self.reply(to: question, answer: await answer(question), index: index)
                        // On the source's queue, where the fd is closed after cancel(): while
                        // `closed` is not set there, the fd is still open.
                        queue.async {
                            guard let reply, !log.closed.withLock({ $0 }) else { return }
                            _ = reply.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        }
                    }
                case nil:
                    continue
                }
            }
        }
        source.setCancelHandler { _ = Glibc.close(fd) }
        source.resume()
        self.source = Mutex(source)
    }

    deinit { close() }

    /// Stops answering and closes the management socket.
    public func close() {
        log.closed.withLock { $0 = true }
        source.withLock { $0.cancel() }
    }

    enum Event: Equatable {
        case question(Question)
        case key(LongTermKey)
    }

    /// The pairing question or key in one management event for adapter `index`; nil for
    /// anything else (other events and adapters, BR/EDR peers, short events). Parameters:
    /// User Confirmation Request: Address (6), Address_Type (1), Confirm_Hint (1), Value (4);
    /// User Passkey Request: Address, Address_Type; Passkey Notify: Address, Address_Type,
    /// Passkey (4), Entered (1); New Long Term Key: Store_Hint (1), Address, Address_Type,
    /// Key_Type (1), Central (1), Encryption_Size (1), EDiv (2), Rand (8), Value (16).
    static func event(_ bytes: ArraySlice<UInt8>, index: Int) -> Event? {
        let e = Array(bytes)
        guard e.count >= 6, Int(e[2]) | Int(e[3]) << 8 == index else { return nil }
        let code = UInt16(e[0]) | UInt16(e[1]) << 8
        let p = e[6...]
        guard p.count == Int(e[4]) | Int(e[5]) << 8 else { return nil }
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(UInt32(0)) { $0 | UInt32(e[at + $1]) << (8 * UInt32($1)) } }
        switch code {
        case Code.userConfirmationRequest where p.count >= 12:
            guard let peer = HCIAdapters.managementPeer(e[6..<13]) else { return nil }
            return .question(e[13] == 0x01 ? .justWorks(peer: peer) : .numericComparison(peer: peer, value: u32(14)))
        case Code.userPasskeyRequest where p.count >= 7:
            return HCIAdapters.managementPeer(e[6..<13]).map { .question(.passkey(peer: $0)) }
        case Code.passkeyNotify where p.count >= 12:
            return HCIAdapters.managementPeer(e[6..<13]).map { .question(.displayPasskey(peer: $0, passkey: u32(13), entered: e[17])) }
        case Code.newLongTermKey where p.count >= 37:
            guard let peer = HCIAdapters.managementPeer(e[7..<14]) else { return nil }
            let type = e[14]
            return .key(LongTermKey(peer: peer, persistent: e[6] == 0x01, authenticated: type == 0x01 || type == 0x03,
                                    secureConnections: (0x02...0x04).contains(type), keySize: Int(e[16])))
        default:
            return nil
        }
    }

    /// The management command that answers `question` with `answer` on adapter `index`
    /// (the reply commands carry Address and Address_Type back; User Passkey Reply adds
    /// Passkey, 4 octets); nil for `.displayPasskey`, which takes no reply.
    static func reply(to question: Question, answer: Answer, index: Int) -> [UInt8]? {
        switch question {
        case .justWorks(let peer), .numericComparison(let peer, _):
            let code = answer == .refuse ? Code.userConfirmationNegativeReply : Code.userConfirmationReply
            return HCIAdapters.managementPacket(code, index: index, parameters: HCIAdapters.managementAddress(peer))
        case .passkey(let peer):
            guard case .passkey(let passkey) = answer, passkey <= 999_999 else {
                return HCIAdapters.managementPacket(Code.userPasskeyNegativeReply, index: index, parameters: HCIAdapters.managementAddress(peer))
            }
            let value = (0..<4).map { UInt8(truncatingIfNeeded: passkey >> (8 * UInt32($0))) }
            return HCIAdapters.managementPacket(Code.userPasskeyReply, index: index, parameters: HCIAdapters.managementAddress(peer) + value)
        case .displayPasskey:
            return nil
        }
    }
}
