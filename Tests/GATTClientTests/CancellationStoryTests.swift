import Testing
import ATT
import GATTClient
import BLEWire
import BLECore

/// Every layer's error answers one question the same way: was this only the caller's
/// cancellation? Each layer's own `cancelled` cases, and errors that wrap one, say yes;
/// failures say no.
@Suite struct CancellationStoryTests {
    static let peer = LEAddress("F0:F1:F2:F3:F4:F5", type: .random)!
    /// HCI_Reset and HCI_Disconnect (Vol 4, Part E, 7.3.2 and 7.1.6).
    static let reset = HCIOpcode(rawValue: 0x0C03)
    static let disconnect = HCIOpcode(rawValue: 0x0406)
    static let linkCancelled = LinkError.cancelled(peer: peer.address, handle: 0x0040, channelID: 0x0004)

    static func isCancellation(_ error: any Error) -> Bool {
        (error as? any BLEError)?.isCancellation ?? false
    }

    @Test func cancellationsOfEveryLayerSayYes() {
        let cancellations: [any Error] = [
            CancellationError(),
            HCIError.cancelled(opcode: Self.reset),
            HCIError.cancelledAfterSending(opcode: Self.reset),
            Self.linkCancelled,
            ConnectionError.cancelled(peer: Self.peer),
            ConnectionError.command(peer: Self.peer, .cancelledAfterSending(opcode: Self.disconnect)),
            ATTError.cancelled(.readRequest),
            ATTError.linkClosed(Self.linkCancelled),
            GATTProcedureError.att(.cancelled(.writeRequest)),
            GATTError.cancelled(operation: .reading, target: .attribute(BluetoothUUID(uuid16: 0x2A19), handle: 0x0003)),
            GATTError.connection(.cancelled(peer: Self.peer)),
            L2CAPSocketError.cancelled(peer: "F0:F1:F2:F3:F4:F5"),
        ]
        for error in cancellations { #expect(Self.isCancellation(error), "\(error)") }
    }

    @Test func failuresSayNo() {
        let failures: [any Error] = [
            HCIError.commandFailed(opcode: Self.reset, status: .commandDisallowed),
            HCIError.transportLost("closed"),
            LinkError.disconnected(peer: Self.peer.address, reason: .remoteUserTerminatedConnection),
            ConnectionError.timeout(peer: Self.peer, milliseconds: 100),
            ConnectionError.command(peer: Self.peer, .commandTimeout(opcode: Self.disconnect, milliseconds: 2000)),
            ATTError.transactionTimeout(.readRequest),
            ATTError.linkClosed(.transportLost("closed")),
            GATTProcedureError.invalidResponse("handles do not increase"),
            GATTError.timeout(operation: .reading, target: .attribute(BluetoothUUID(uuid16: 0x2A19), handle: 0x0003), peer: Self.peer.address),
            ScanError.transportLost("closed"),
            L2CAPSocketError.timeout(peer: "F0:F1:F2:F3:F4:F5", milliseconds: 100),
        ]
        for error in failures { #expect(!Self.isCancellation(error), "\(error)") }
    }
}
