import BLECore
import BLEWire

/// The Filter Accept List (Vol 4, Part E, 7.8.14 to 7.8.17; Vol 6, Part B, 4.3.1): bounded by
/// `Options.filterAcceptListSize`, and not to be changed while a create-connection command
/// that uses it is pending (Command Disallowed, 0x0C).
extension VirtualController {
    func interpretAcceptListCommand(_ packet: HCICommandPacket) {
        let opcode = packet.opcode
        if opcode.rawValue != 0x200F, pending?.usesAcceptList == true { return complete(opcode, [HCIStatus.commandDisallowed.rawValue]) }
        switch opcode.rawValue {
        case 0x200F:
            guard packet.parameters.isEmpty else { return complete(opcode, [0x12]) }
            complete(opcode, [0x00, options.filterAcceptListSize])
        case 0x2010:
            guard packet.parameters.isEmpty else { return complete(opcode, [0x12]) }
            acceptList.removeAll()
            complete(opcode, [0x00])
        default:
            let p = packet.parameters
            guard p.count == 7, p[0] <= 0x01 else { return complete(opcode, [0x12]) }  // Invalid HCI Command Parameters
            let address = BluetoothAddress(rawValue: p[1...6].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            let entry = LEAddress(address, type: p[0] == 0x01 ? .random : .public)
            if opcode.rawValue == 0x2011 {
                if !acceptList.contains(entry) {
                    // Memory Capacity Exceeded (0x07).
                    guard acceptList.count < Int(options.filterAcceptListSize) else { return complete(opcode, [0x07]) }
                    acceptList.append(entry)
                }
            } else {
                acceptList.removeAll { $0 == entry }
            }
            complete(opcode, [0x00])
        }
    }

    /// The Filter Accept List now, in the order the host added it.
    public var filterAcceptList: [LEAddress] { onQueue { acceptList } }
}
