#if canImport(Glibc)
import Glibc
#endif
import CHCI
import Dispatch
import Synchronization

/// Confirms the kernel's Just Works pairings on adapter hciN while it is open, as bluetoothd
/// does when no agent can show a value. The kernel asks user space to confirm every Just Works
/// pairing (LE legacy and Secure Connections) with a User Confirmation Request carrying
/// Confirm_Hint 1 on its management interface, and the pairing waits (until SMP's 30 s
/// timeout) for the answer; without bluetoothd nothing gives it. This answers User
/// Confirmation Reply to those, and User Confirmation Negative Reply to a numeric comparison
/// (Confirm_Hint 0), whose value no one here can check. Needs CAP_NET_ADMIN.
///
///     let agent = try JustWorksAgent(index: 0)
///     let channel = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: peer, security: .encrypted, executor: executor)
///     agent.close()
public final class JustWorksAgent: @unchecked Sendable { // source is set once; cancel() is thread-safe
    /// The adapter index whose requests are answered.
    public let index: Int
    private let source: any DispatchSourceRead
    private final class Counter: Sendable { let value = Atomic<Int>(0) }
    private let accepted = Counter()

    /// Just Works pairings confirmed so far.
    public var confirmations: Int { accepted.value.load(ordering: .relaxed) }

    /// Event and command codes of the management interface (BlueZ doc/mgmt-api.txt).
    enum Code {
        static let userConfirmationRequest: UInt16 = 0x000F
        static let userConfirmationReply: UInt16 = 0x001C
        static let userConfirmationNegativeReply: UInt16 = 0x001D
    }

    /// Starts answering on the management interface.
    public init(index: Int) throws(TransportError) {
        self.index = index
        let fd = try HCIAdapters.openManagementSocket(device: "hci\(index)")
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            let err = errno
            _ = Glibc.close(fd)
            throw .system(operation: "fcntl(O_NONBLOCK) on the management channel", endpoint: "hci\(index)", errno: err)
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "just-works-agent.hci\(index)"))
        let accepted = self.accepted
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                if let reply = Self.reply(to: buffer[..<n], index: index) {
                    _ = reply.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if reply[0] == UInt8(Code.userConfirmationReply) { accepted.value.add(1, ordering: .relaxed) }
                }
            }
        }
        source.setCancelHandler { _ = Glibc.close(fd) }
        self.source = source
        source.resume()
    }

    deinit { source.cancel() }

    /// Stops answering and closes the management socket.
    public func close() { source.cancel() }

    /// The answer to one management event, or nil when it is not a User Confirmation Request
    /// for adapter `index`. The event: code, index, parameter length (2 octets each,
    /// little-endian), then Address (6), Address_Type (1), Confirm_Hint (1), Value (4); the
    /// reply carries Address and Address_Type back.
    static func reply(to event: ArraySlice<UInt8>, index: Int) -> [UInt8]? {
        let e = Array(event)
        guard e.count >= 18, UInt16(e[0]) | UInt16(e[1]) << 8 == Code.userConfirmationRequest,
              Int(e[2]) | Int(e[3]) << 8 == index else { return nil }
        let opcode = e[13] == 0x01 ? Code.userConfirmationReply : Code.userConfirmationNegativeReply
        return [UInt8(opcode & 0xFF), UInt8(opcode >> 8), e[2], e[3], 0x07, 0x00] + e[6..<13]
    }
}
