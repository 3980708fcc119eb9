import BLECore
import BLEWire

/// Controller-level faults and raw injection.
extension VirtualController {
    /// Sends HCI_Hardware_Error (Vol 4, Part E, 7.7.16): the host must reset the controller.
    public func hardwareError(code: UInt8 = 0x00) {
        onQueue { send(.hardwareError(code: code)) }
    }

    /// Closes the controller's end of the transport: the host sees the transport lost.
    public func closeTransport() {
        onQueue {
            transport?.close()
            transport = nil
            resetState()
            changed()
        }
    }

    /// Sends `packet` to the host exactly as given (an event or ACL packet the controller
    /// would not produce by itself, malformed ones included).
    ///
    ///     vc.inject(.event(HCIEventPacket(code: 0x3E, parameters: [0x02, 0x01])))   // truncated advertising report
    public func inject(_ packet: HCIPacket) {
        onQueue {
            if case .event(let e) = packet { events.append(e) }
            send(packet)
        }
    }
}
