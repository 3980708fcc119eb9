import BLEWire
import ATT

/// A service found on a peer (Core Spec 5.4, Vol 3, Part G, 3.1): its UUID and handle range.
///
///     for s in try await peripheral.services() { print(s) }   // "Heart Rate (180D) 0x000C-0x0013"
public struct GATTService: Hashable, Sendable, CustomStringConvertible {
    public var uuid: BluetoothUUID
    /// The service declaration's handle.
    public var handle: UInt16
    /// The last handle of the service's group.
    public var endHandle: UInt16
    public var isPrimary: Bool

    public init(uuid: BluetoothUUID, handle: UInt16, endHandle: UInt16, isPrimary: Bool = true) {
        self.uuid = uuid; self.handle = handle; self.endHandle = endHandle; self.isPrimary = isPrimary
    }

    /// The handles of the service's group.
    public var range: ATTHandleRange { ATTHandleRange(start: handle, end: endHandle) }
    /// The assigned name, when the UUID has one ("Heart Rate").
    public var name: String? { AssignedNumbers.serviceName(uuid) }

    public var description: String {
        "\(uuid.gattDisplayName) \(handle.hex)-\(endHandle.hex)"
    }
}

/// A service included by another (Core Spec 5.4, Vol 3, Part G, 3.2): the include
/// declaration's handle and the included service's range.
public struct GATTIncludedService: Hashable, Sendable {
    public var declarationHandle: UInt16
    public var service: GATTService
    public init(declarationHandle: UInt16, service: GATTService) {
        self.declarationHandle = declarationHandle; self.service = service
    }
}
