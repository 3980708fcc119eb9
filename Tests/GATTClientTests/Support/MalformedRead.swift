import Testing
import BLECore
import GATTClient
import BLEWire

/// Reads `characteristic` and expects `GATTError.malformed` naming the read, its UUID and
/// value handle, `peer`, and a detail that contains `detail`.
func expectMalformedRead(_ peripheral: Peripheral, _ characteristic: CharacteristicIdentifier, valueHandle: UInt16,
                         peer: BluetoothAddress?, detail expected: String, sourceLocation: SourceLocation = #_sourceLocation) async {
    do {
        _ = try await peripheral.read(characteristic)
        Issue.record("the read should fail", sourceLocation: sourceLocation)
    } catch {
        guard case .malformed(let operation, let target, let from, let detail) = error else {
            Issue.record("expected GATTError.malformed, got \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(operation == .reading, sourceLocation: sourceLocation)
        #expect(target == .attribute(characteristic.uuid, handle: valueHandle), sourceLocation: sourceLocation)
        #expect(from == peer, sourceLocation: sourceLocation)
        #expect(detail.contains(expected), sourceLocation: sourceLocation)
    }
}
