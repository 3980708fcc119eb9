#if canImport(Glibc)
import Glibc
#endif
import CHCI
import BLEWire

/// One Bluetooth adapter the kernel knows (HCIGETDEVINFO).
public struct AdapterInfo: Sendable, Hashable, CustomStringConvertible {
    /// N of hciN.
    public var index: Int
    /// "hci0".
    public var name: String
    public var address: BluetoothAddress
    public var isUp: Bool
    /// "USB", "UART", "Virtual"...
    public var bus: String
    /// "Primary" (BR/EDR and LE) or "AMP".
    public var type: String

    public init(index: Int, name: String, address: BluetoothAddress, isUp: Bool, bus: String, type: String) {
        self.index = index
        self.name = name
        self.address = address
        self.isUp = isUp
        self.bus = bus
        self.type = type
    }

    public var description: String { "\(name) \(address) \(bus) \(type) \(isUp ? "UP" : "DOWN")" }
}

/// The kernel's adapter list and power state, through ioctls on an HCI control socket.
///
///     for adapter in try HCIAdapters.list() { print(adapter) }
///     try HCIAdapters.bringDown(index: 0)   // before opening hci0 on the user channel
public enum HCIAdapters {
    /// Every adapter the kernel has registered, in index order.
    public static func list() throws(TransportError) -> [AdapterInfo] {
        let ctl = try controlSocket()
        defer { _ = Glibc.close(ctl) }
        var devices = chci_dev_list()
        if chci_get_dev_list(ctl, &devices) < 0 {
            throw .system(operation: "ioctl(HCIGETDEVLIST)", endpoint: "hci control socket", errno: errno)
        }
        let count = min(Int(devices.dev_num), Int(HCI_MAX_DEV))
        let ids: [UInt16] = withUnsafeBytes(of: &devices.dev_req) { raw in
            let reqs = raw.bindMemory(to: hci_dev_req.self)
            return (0..<count).map { reqs[$0].dev_id }
        }
        var adapters: [AdapterInfo] = []
        for id in ids {
            var info = hci_dev_info()
            // An adapter can vanish between the two ioctls: skip it.
            guard chci_get_dev_info(ctl, id, &info) == 0 else { continue }
            adapters.append(Self.info(info))
        }
        return adapters.sorted { $0.index < $1.index }
    }

    /// Powers the adapter on (HCIDEVUP). Already up is success.
    public static func bringUp(index: Int) throws(TransportError) {
        try deviceIoctl(index: index, up: true)
    }

    /// Powers the adapter off (HCIDEVDOWN), as the user channel requires.
    public static func bringDown(index: Int) throws(TransportError) {
        try deviceIoctl(index: index, up: false)
    }

    private static func deviceIoctl(index: Int, up: Bool) throws(TransportError) {
        let device = "hci\(index)"
        guard (0..<Int(HCI_DEV_NONE)).contains(index) else {
            throw .invalidSpec(device, reason: "adapter index \(index) is out of range 0-\(HCI_DEV_NONE - 1)")
        }
        let ctl = try controlSocket()
        defer { _ = Glibc.close(ctl) }
        let rc = up ? chci_dev_up(ctl, Int32(index)) : chci_dev_down(ctl, Int32(index))
        guard rc < 0 else { return }
        let err = errno
        switch err {
        case EALREADY where up:
            return
        case EPERM, EACCES:
            throw .permissionDenied(device: device, errno: err)
        case ENODEV:
            let available = (try? list().map(\.index)) ?? []
            throw .noSuchAdapter(index: index, available: available)
        case EBUSY, EUSERS:
            throw .busy(device: device)
        default:
            throw .system(operation: up ? "ioctl(HCIDEVUP)" : "ioctl(HCIDEVDOWN)", endpoint: device, errno: err)
        }
    }

    private static func controlSocket() throws(TransportError) -> Int32 {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
        if fd < 0 {
            let err = errno
            if err == EAFNOSUPPORT { throw .bluetoothUnsupported }
            throw .system(operation: "socket(AF_BLUETOOTH, BTPROTO_HCI)", endpoint: "hci control socket", errno: err)
        }
        return fd
    }

    private static func info(_ info: hci_dev_info) -> AdapterInfo {
        var info = info
        let name = withUnsafeBytes(of: &info.name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let address = withUnsafeBytes(of: &info.bdaddr) { raw in
            raw.prefix(6).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        // type: bus in bits 0-3, device type in bits 4-5 (include/net/bluetooth/hci.h).
        return AdapterInfo(
            index: Int(info.dev_id),
            name: name.isEmpty ? "hci\(info.dev_id)" : name,
            address: BluetoothAddress(rawValue: address),
            isUp: chci_dev_is_up(&info) != 0,
            bus: busName(info.type & 0x0F),
            type: (info.type >> 4) & 0x03 == 0 ? "Primary" : "AMP")
    }

    /// HCI_VIRTUAL ... HCI_VIRTIO (include/net/bluetooth/hci.h).
    static func busName(_ bus: UInt8) -> String {
        let names = ["Virtual", "USB", "PCCARD", "UART", "RS232", "PCI", "SDIO", "SPI", "I2C", "SMD", "VIRTIO", "IPC"]
        return Int(bus) < names.count ? names[Int(bus)] : "bus \(bus)"
    }
}
