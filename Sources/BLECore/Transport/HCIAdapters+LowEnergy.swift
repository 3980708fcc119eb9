#if canImport(Glibc)
import Glibc
#endif
import CHCI

extension HCIAdapters {
    /// Enables LE on adapter hciN through the kernel's management interface (Set Low Energy,
    /// opcode 0x000D, on HCI_CHANNEL_CONTROL), as bluetoothd does at start. Without bluetoothd
    /// the kernel connects LE links but has no SMP channel, so it cannot pair and BT_SECURITY
    /// is not reached. The kernel registers SMP when it powers the adapter on with the
    /// management interface in use: call this while the adapter is down, then bring it up.
    /// Needs CAP_NET_ADMIN; waits at most `timeout` for the kernel's answer.
    ///
    ///     try HCIAdapters.enableLowEnergy(index: 0)
    ///     try HCIAdapters.bringUp(index: 0)
    public static func enableLowEnergy(index: Int, timeout: Duration = .seconds(5)) throws(TransportError) {
        try managementCommand(0x000D, "Set Low Energy", index: index, parameter: 0x01, timeout: timeout)
    }

    /// Lets the kernel pair with LE Secure Connections (P-256 ECDH, Vol 3, Part H, 2.3.5.6)
    /// on adapter hciN: Set Secure Connections (opcode 0x002D, enabled = 0x01) on the
    /// management interface, as bluetoothd does by default. Without it the kernel pairs with
    /// LE legacy pairing. Call it after `enableLowEnergy(index:)`, while the adapter is down.
    /// Needs CAP_NET_ADMIN; waits at most `timeout` for the kernel's answer.
    ///
    ///     try HCIAdapters.enableSecureConnections(index: 0)
    public static func enableSecureConnections(index: Int, timeout: Duration = .seconds(5)) throws(TransportError) {
        try managementCommand(0x002D, "Set Secure Connections", index: index, parameter: 0x01, timeout: timeout)
    }

    /// Sends one management command with a one-octet parameter for adapter hciN and waits for
    /// its Command Complete or Command Status.
    private static func managementCommand(_ opcode: UInt16, _ name: String, index: Int, parameter: UInt8, timeout: Duration) throws(TransportError) {
        let device = "hci\(index)"
        let fd = try openManagementSocket(device: device)
        defer { _ = Glibc.close(fd) }
        // Opcode, controller index, parameter length (little-endian), then the parameter.
        let command: [UInt8] = [UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(index & 0xFF), UInt8(index >> 8), 0x01, 0x00, parameter]
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
            // Event code, index, length, then for Command Complete (0x0001) and Command Status
            // (0x0002): the command's opcode and a status.
            guard n >= 9 else { continue }
            let event = UInt16(buffer[0]) | UInt16(buffer[1]) << 8
            let eventIndex = Int(buffer[2]) | Int(buffer[3]) << 8
            let answered = UInt16(buffer[6]) | UInt16(buffer[7]) << 8
            guard (event == 0x0001 || event == 0x0002), eventIndex == index, answered == opcode else { continue }
            let status = buffer[8]
            switch status {
            case 0x00: return
            case 0x11: throw .noSuchAdapter(index: index, available: (try? list().map(\.index)) ?? [])
            case 0x14: throw .permissionDenied(device: device, errno: EPERM)
            default: throw .system(operation: "\(name) (management status 0x\(String(status, radix: 16)))", endpoint: device, errno: 0)
            }
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
