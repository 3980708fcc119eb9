import BLECore
import BLETransport

extension VirtualController {
    /// Serves the controller as an H4 device on a new pseudo-terminal and returns the transport
    /// spec that opens it (`"serial:/dev/pts/3@115200"`), so code that opens a controller by
    /// name (`Central()` with `$BLE_DEVICE`, the `ble` tool) reaches this controller. Like
    /// `makeTransport`, it replaces the previous transport.
    ///
    ///     setenv("BLE_DEVICE", try vc.servePseudoTerminal(), 1)
    ///     let central = Central()
    public func servePseudoTerminal() throws(TransportError) -> String {
        let master = try StreamTransport.openPTY()
        guard let path = master.ptyPath else { throw .system(operation: "name the pseudo-terminal", endpoint: master.name, errno: 0) }
        attach(master)
        return TransportSpec.serial(path: path, baud: TransportSpec.defaultBaud, rtscts: false).description
    }
}
