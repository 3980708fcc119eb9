import BLEWire
import ATT

/// A characteristic found on a peer (Core Spec 5.4, Vol 3, Part G, 3.3): its declaration
/// handle, value handle, properties and the last handle of its definition.
///
///     let c = try await peripheral.characteristics(of: heartRate).first!
///     c.properties.contains(.notify)
public struct GATTCharacteristic: Hashable, Sendable, CustomStringConvertible {
    public var uuid: BluetoothUUID
    /// The characteristic declaration's handle.
    public var handle: UInt16
    /// The handle of the characteristic value.
    public var valueHandle: UInt16
    public var properties: GATTCharacteristicProperties
    /// The last handle of the characteristic's definition (its descriptors end here).
    public var endHandle: UInt16
    /// The UUID of the service that holds it.
    public var serviceUUID: BluetoothUUID

    public init(uuid: BluetoothUUID, handle: UInt16, valueHandle: UInt16, properties: GATTCharacteristicProperties,
                endHandle: UInt16, serviceUUID: BluetoothUUID) {
        self.uuid = uuid; self.handle = handle; self.valueHandle = valueHandle
        self.properties = properties; self.endHandle = endHandle; self.serviceUUID = serviceUUID
    }

    /// The assigned name, when the UUID has one ("Heart Rate Measurement").
    public var name: String? { AssignedNumbers.characteristicName(uuid) }
    /// The handles that may hold descriptors (after the value, up to `endHandle`).
    public var descriptorRange: ATTHandleRange? {
        valueHandle < endHandle ? ATTHandleRange(start: valueHandle + 1, end: endHandle) : nil
    }

    public var description: String {
        "\(uuid.gattDisplayName) value \(valueHandle.hex) [\(properties)]"
    }
}

/// A descriptor found on a peer (Core Spec 5.4, Vol 3, Part G, 3.3.3).
public struct GATTDescriptor: Hashable, Sendable, CustomStringConvertible {
    public var uuid: BluetoothUUID
    public var handle: UInt16
    public init(uuid: BluetoothUUID, handle: UInt16) { self.uuid = uuid; self.handle = handle }

    /// The assigned name ("Client Characteristic Configuration").
    public var name: String? { AssignedNumbers.descriptorName(uuid) }
    public var description: String { "\(uuid.gattDisplayName) \(handle.hex)" }
}
