#if canImport(Glibc)
import Glibc
#endif
import BLEWire

/// Why a transport could not be opened or stopped working. Every message says what to do.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The spec string could not be parsed.
    case invalidSpec(String, reason: String)
    /// socket(AF_BLUETOOTH) failed with EAFNOSUPPORT: the kernel has no Bluetooth support.
    case bluetoothUnsupported
    /// EPERM/EACCES opening an HCI socket.
    case permissionDenied(device: String, errno: Int32)
    /// EBUSY: the adapter is up or held by another program (bluetoothd).
    case busy(device: String)
    /// ENODEV: no adapter with that index; `available` lists the ones that exist.
    case noSuchAdapter(index: Int, available: [Int])
    /// EUSERS: another user-channel socket already holds the adapter.
    case tooManyUsers(device: String)
    /// ECONNREFUSED on a tcp/unix endpoint.
    case connectionRefused(endpoint: String)
    /// The endpoint could not be reached or resolved.
    case unreachable(endpoint: String, detail: String)
    /// The serial device path does not exist.
    case noSuchSerialDevice(path: String)
    /// EACCES/EPERM opening a serial device.
    case serialAccessDenied(path: String, errno: Int32)
    /// Another system call failed.
    case system(operation: String, endpoint: String, errno: Int32)
    /// The stream ended or failed while open (EOF, EIO, a packet cut in the middle).
    case lost(endpoint: String, reason: String)
    /// The byte stream held something that is not H4 (a bad packet indicator).
    case malformedStream(endpoint: String, detail: String)
    /// Used after `close()`.
    case closed(endpoint: String)
    /// The kernel's management interface refused `command` on `device` with a status
    /// (BlueZ doc/mgmt-api.txt: 0x0B Rejected, 0x0C Not Supported, 0x0F Not Powered...).
    case managementRefused(command: String, device: String, status: UInt8)

    public var description: String {
        switch self {
        case .invalidSpec(let s, let reason):
            return "invalid transport \"\(s)\": \(reason); use hci0, hci-user:N, hci-raw:N, tcp:HOST:PORT, unix:PATH, serial:/dev/ttyUSB0[@BAUD][,rtscts], pty or replay:FILE.btsnoop"
        case .bluetoothUnsupported:
            return "this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); load the module with 'modprobe bluetooth', or use an H4 controller: -d tcp:HOST:PORT, -d serial:/dev/ttyUSB0"
        case .permissionDenied(let dev, let err):
            return "permission denied opening \(dev) (\(errnoName(err))): run as root or grant the capabilities with 'sudo setcap cap_net_admin,cap_net_raw+eip $(command -v ble)'"
        case .busy(let dev):
            return "\(dev) is busy (EBUSY): the adapter is up or held by bluetoothd; stop it with 'sudo systemctl stop bluetooth' and take the adapter down with 'sudo hciconfig \(dev) down' (or 'ble adapters --down \(dev)'), or use -d hci-raw:N to share it with the kernel"
        case .noSuchAdapter(let index, let available):
            let list = available.isEmpty ? "the kernel knows no adapter (check 'ble adapters', dmesg, rfkill)" : "adapters present: " + available.map { "hci\($0)" }.joined(separator: ", ")
            return "no adapter hci\(index) (ENODEV); \(list)"
        case .tooManyUsers(let dev):
            return "\(dev) is already held by another user-channel program (EUSERS); stop that program first"
        case .connectionRefused(let ep):
            return "connection refused by \(ep): is the controller or emulator listening there?"
        case .unreachable(let ep, let detail):
            return "cannot reach \(ep): \(detail)"
        case .noSuchSerialDevice(let path):
            return "serial device \(path) does not exist; check the path (ls /dev/ttyUSB* /dev/ttyACM* /dev/ttyAMA*) and that the adapter is plugged in"
        case .serialAccessDenied(let path, let err):
            return "cannot open serial device \(path) (\(errnoName(err))): add your user to the 'dialout' group ('sudo usermod -aG dialout $USER', then log in again) or run as root"
        case .system(let op, let ep, let err):
            return "\(op) failed on \(ep): \(errnoName(err))"
        case .lost(let ep, let reason):
            return "transport \(ep) lost: \(reason)"
        case .malformedStream(let ep, let detail):
            return "transport \(ep) sent bytes that are not H4: \(detail); check the baud rate and that the device speaks H4"
        case .closed(let ep):
            return "transport \(ep) is closed"
        case .managementRefused(let command, let device, let status):
            return "the kernel refused \(command) on \(device): management status \(status.hex) (\(managementStatusName(status)))"
        }
    }
}

/// The name of a management command status (BlueZ doc/mgmt-api.txt, "Error Codes").
func managementStatusName(_ status: UInt8) -> String {
    let names = ["Success", "Unknown Command", "Not Connected", "Failed", "Connect Failed", "Authentication Failed",
                 "Not Paired", "No Resources", "Timeout", "Already Connected", "Busy", "Rejected", "Not Supported",
                 "Invalid Parameters", "Disconnected", "Not Powered", "Cancelled", "Invalid Index", "RFKilled",
                 "Already Paired", "Permission Denied"]
    return Int(status) < names.count ? names[Int(status)] : "unknown status"
}

/// "EBUSY (16): Device or resource busy".
public func errnoName(_ err: Int32) -> String {
    let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EIO: "EIO", EBADF: "EBADF", EAGAIN: "EAGAIN", EACCES: "EACCES",
        EBUSY: "EBUSY", ENODEV: "ENODEV", EINVAL: "EINVAL", EPIPE: "EPIPE", EAFNOSUPPORT: "EAFNOSUPPORT",
        EADDRINUSE: "EADDRINUSE", ECONNRESET: "ECONNRESET", ECONNREFUSED: "ECONNREFUSED", ETIMEDOUT: "ETIMEDOUT",
        EHOSTUNREACH: "EHOSTUNREACH", ENETUNREACH: "ENETUNREACH", EUSERS: "EUSERS", ENOTCONN: "ENOTCONN",
        EALREADY: "EALREADY", EINPROGRESS: "EINPROGRESS", ERFKILL: "ERFKILL", ENOTSUP: "EOPNOTSUPP",
    ]
    let text = String(cString: strerror(err))
    return "\(names[err] ?? "errno") (\(err)): \(text)"
}
