import Glibc
import Testing
@testable import BLECore
@testable import BLETransport

/// True when this kernel has no AF_BLUETOOTH (socket() fails with EAFNOSUPPORT).
private let kernelLacksBluetooth: Bool = {
    let fd = socket(31 /* AF_BLUETOOTH */, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 1 /* BTPROTO_HCI */)
    if fd >= 0 { close(fd); return false }
    return errno == EAFNOSUPPORT
}()

@Suite struct TransportHCISocketTests {
    static let unsupportedMessage = "this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); load the module with 'modprobe bluetooth', or use an H4 controller: -d tcp:HOST:PORT, -d serial:/dev/ttyUSB0"

    @Test(.enabled(if: kernelLacksBluetooth, "the kernel has Bluetooth; the VM tests cover the real socket"),
          arguments: ["hci0", "hci-user:1", "hci-raw:0"])
    func noBluetoothInTheKernel(spec: String) {
        let error = #expect(throws: TransportError.self) { try TransportSpec.parse(spec).open() }
        #expect(error == .bluetoothUnsupported)
        #expect(error?.description == Self.unsupportedMessage)
    }

    @Test(.enabled(if: kernelLacksBluetooth, "the kernel has Bluetooth; the VM tests cover the real socket"))
    func adapterListWithoutBluetooth() {
        #expect(throws: TransportError.bluetoothUnsupported) { try HCIAdapters.list() }
        #expect(throws: TransportError.bluetoothUnsupported) { try HCIAdapters.bringUp(index: 0) }
        #expect(throws: TransportError.bluetoothUnsupported) { try HCIAdapters.bringDown(index: 0) }
    }

    /// The errno mapping of socket()/bind(), and the text each error shows.
    @Test func openErrnoMapping() {
        #expect(HCISocketTransport.openError(EAFNOSUPPORT, index: 0, device: "hci0", channel: .user) == .bluetoothUnsupported)
        #expect(HCISocketTransport.openError(EPERM, index: 0, device: "hci0", channel: .user) == .permissionDenied(device: "hci0", errno: EPERM))
        #expect(HCISocketTransport.openError(EACCES, index: 0, device: "hci0", channel: .user) == .permissionDenied(device: "hci0", errno: EACCES))
        #expect(HCISocketTransport.openError(EBUSY, index: 0, device: "hci0", channel: .user) == .busy(device: "hci0"))
        #expect(HCISocketTransport.openError(EUSERS, index: 2, device: "hci2", channel: .user) == .tooManyUsers(device: "hci2"))
        #expect(HCISocketTransport.openError(ERFKILL, index: 0, device: "hci0", channel: .user) == .system(operation: "bind HCI_CHANNEL_USER", endpoint: "hci0", errno: ERFKILL))
        if kernelLacksBluetooth {
            // The adapter list cannot be read here, so none is offered.
            #expect(HCISocketTransport.openError(ENODEV, index: 3, device: "hci3", channel: .raw) == .noSuchAdapter(index: 3, available: []))
        }
        #expect(TransportError.noSuchAdapter(index: 3, available: [0, 1]).description == "no adapter hci3 (ENODEV); adapters present: hci0, hci1")
        #expect(TransportError.busy(device: "hci0").description.hasPrefix("hci0 is busy (EBUSY): the adapter is up or held by bluetoothd"))
    }

    @Test func busNames() {
        #expect(HCIAdapters.busName(0) == "Virtual")
        #expect(HCIAdapters.busName(1) == "USB")
        #expect(HCIAdapters.busName(3) == "UART")
        #expect(HCIAdapters.busName(15) == "bus 15")
    }
}
