#if canImport(Glibc)
import Glibc
#endif
import CHCI
import BLEWire

/// The kernel's management interface (HCI_CHANNEL_CONTROL; BlueZ doc/mgmt-api.txt), which
/// bluetoothd uses to set adapters up: every packet is Opcode or Event_Code, Controller_Index
/// and Parameter_Length (2 octets each, little-endian), then the parameters.
extension HCIAdapters {
    /// Management command status Not Paired (mgmt-api.txt, "Unpair Device Command").
    static let managementStatusNotPaired: UInt8 = 0x06

    /// Sends one management command for adapter hciN and waits, at most `timeout`, for its
    /// Command Complete or Command Status. Returns the status when it is one of `accepted`
    /// (Success always is); any other status is thrown.
    @discardableResult
    static func managementCommand(_ opcode: UInt16, _ name: String, index: Int, parameters: [UInt8],
                                  accepting accepted: Set<UInt8> = [], timeout: Duration) throws(TransportError) -> UInt8 {
        let device = "hci\(index)"
        let fd = try openManagementSocket(device: device)
        defer { _ = Glibc.close(fd) }
        let command = managementPacket(opcode, index: index, parameters: parameters)
        guard command.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == command.count else {
            throw .system(operation: "write(\(name))", endpoint: device, errno: errno)
        }
        let ms = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, ms)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw .lost(endpoint: device, reason: "the kernel did not answer \(name) within \(timeout)") }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .system(operation: "read(management channel)", endpoint: device, errno: errno)
            }
            // Command Complete (0x0001) and Command Status (0x0002) start with the command's
            // opcode and a status.
            guard n >= 9 else { continue }
            let event = UInt16(buffer[0]) | UInt16(buffer[1]) << 8
            let eventIndex = Int(buffer[2]) | Int(buffer[3]) << 8
            let answered = UInt16(buffer[6]) | UInt16(buffer[7]) << 8
            guard (event == 0x0001 || event == 0x0002), eventIndex == index, answered == opcode else { continue }
            let status = buffer[8]
            if status == 0x00 || accepted.contains(status) { return status }
            switch status {
            case 0x11: throw .noSuchAdapter(index: index, available: (try? list().map(\.index)) ?? [])
            case 0x14: throw .permissionDenied(device: device, errno: EPERM)
            default: throw .managementRefused(command: name, device: device, status: status)
            }
        }
    }

    /// One management packet: opcode, controller index, parameter length, parameters.
    static func managementPacket(_ opcode: UInt16, index: Int, parameters: [UInt8]) -> [UInt8] {
        [UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(index & 0xFF), UInt8((index >> 8) & 0xFF),
         UInt8(parameters.count & 0xFF), UInt8(parameters.count >> 8)] + parameters
    }

    /// A peer as the management interface writes it: Address (6 octets, least significant
    /// first) and Address_Type (0x01 LE Public, 0x02 LE Random).
    static func managementAddress(_ peer: LEAddress) -> [UInt8] {
        peer.address.littleEndianBytes + [peer.type == .public || peer.type == .publicIdentity ? 0x01 : 0x02]
    }

    /// The LE peer in `bytes` (Address, Address_Type as above); nil for BR/EDR (0x00) or a
    /// short slice.
    static func managementPeer(_ bytes: ArraySlice<UInt8>) -> LEAddress? {
        guard bytes.count >= 7 else { return nil }
        let b = Array(bytes.prefix(7))
        let raw = (0..<6).reduce(UInt64(0)) { $0 | UInt64(b[$1]) << (8 * UInt64($1)) }
        switch b[6] {
        case 0x01: return LEAddress(BluetoothAddress(rawValue: raw), type: .public)
        case 0x02: return LEAddress(BluetoothAddress(rawValue: raw), type: .random)
        default: return nil
        }
    }

    /// A socket on the kernel's management interface (HCI_CHANNEL_CONTROL), bound to no
    /// adapter (HCI_DEV_NONE): commands and events name theirs.
    static func openManagementSocket(device: String) throws(TransportError) -> Int32 {
        let fd = chci_open_hci_socket(0xFFFF, UInt16(HCI_CHANNEL_CONTROL))
        guard fd >= 0 else {
            let err = errno
            switch err {
            case EAFNOSUPPORT: throw .bluetoothUnsupported
            case EPERM, EACCES: throw .permissionDenied(device: "the management channel", errno: err)
            default: throw .system(operation: "socket/bind(HCI_CHANNEL_CONTROL)", endpoint: device, errno: err)
            }
        }
        return fd
    }
}
