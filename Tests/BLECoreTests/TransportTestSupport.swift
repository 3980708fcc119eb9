import Dispatch
import Glibc
@testable import BLECore
@testable import BLETransport
import BLEWire

/// Collects a transport's events on its queue; tests wait for a condition with a timeout.
final class TransportEventLog: @unchecked Sendable { // state touched only on `queue`
    let queue: DispatchQueue
    private var events: [TransportEvent] = []
    private var waiter: (condition: ([TransportEvent]) -> Bool, continuation: CheckedContinuation<[TransportEvent], Never>)?

    init(label: String = "transport-test") {
        queue = DispatchQueue(label: label)
    }

    var handler: @Sendable (TransportEvent) -> Void {
        { [self] event in
            dispatchPrecondition(condition: .onQueue(queue))
            events.append(event)
            check()
        }
    }

    /// Events so far once `condition` holds, or whatever arrived when `timeout` seconds pass.
    func wait(timeout: Double = 5, until condition: @escaping @Sendable ([TransportEvent]) -> Bool) async -> [TransportEvent] {
        await withCheckedContinuation { continuation in
            queue.async { [self] in
                waiter = (condition, continuation)
                check()
            }
            queue.asyncAfter(deadline: .now() + timeout) { [self] in
                if let w = waiter { waiter = nil; w.continuation.resume(returning: events) }
            }
        }
    }

    func waitForPackets(_ n: Int, timeout: Double = 5) async -> [HCIPacket] {
        await wait(timeout: timeout) { $0.packets.count >= n }.packets
    }

    func waitForClose(timeout: Double = 5) async -> TransportError?? {
        await wait(timeout: timeout) { $0.closeEvent != nil }.closeEvent
    }

    private func check() {
        guard let w = waiter, w.condition(events) else { return }
        waiter = nil
        w.continuation.resume(returning: events)
    }
}

extension Array where Element == TransportEvent {
    var packets: [HCIPacket] {
        compactMap { if case .packet(let p) = $0 { return p } else { return nil } }
    }

    /// nil: no close yet; .some(nil): closed cleanly; .some(error): lost.
    var closeEvent: TransportError?? {
        for e in self { if case .closed(let error) = e { return .some(error) } }
        return nil
    }
}

/// Known packets with bytes from the Core Specification (Vol 4, Part E).
enum SpecPackets {
    /// HCI_Reset (OGF 0x03, OCF 0x0003; 7.3.2), no parameters.
    static let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    /// Command Complete (0x0E; 7.7.14) for HCI_Reset: Num_HCI_Command_Packets 1, opcode, Status 0x00.
    static let resetComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
    /// ACL (5.4.2): handle 0x0040, PB 0b10, length 7: L2CAP length 3, CID 0x0004 (ATT),
    /// ATT Read Request (0x0A) for handle 0x0003 (Vol 3, Part F, 3.4.4.3).
    static let aclReadRequest: [UInt8] = [0x02, 0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00]
    /// SCO (5.4.3): handle 0x0001, length 3.
    static let sco: [UInt8] = [0x03, 0x01, 0x00, 0x03, 0xAA, 0xBB, 0xCC]
    /// ISO (5.4.5): handle 0x0001, length 2 (14-bit field).
    static let iso: [UInt8] = [0x05, 0x01, 0x00, 0x02, 0x00, 0xAA, 0xBB]
    /// LE Set Scan Enable (OGF 0x08, OCF 0x000C; 7.8.11): enable, filter duplicates.
    static let leSetScanEnable: [UInt8] = [0x01, 0x0C, 0x20, 0x02, 0x01, 0x01]

    static var all: [[UInt8]] { [reset, resetComplete, aclReadRequest, sco, iso, leSetScanEnable] }
}

/// Reads exactly `n` bytes from a blocking fd: fewer (none) when the fd's receive timeout
/// passes or the stream ends first.
func readExactly(_ fd: Int32, _ n: Int) -> [UInt8] {
    (try? FileDescriptorIO.readAll(fd, atMost: n)) ?? []
}

/// Writes all of `bytes` to a blocking fd; a failed write ends it quietly (the test's
/// expectation on what arrived says what went wrong).
func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    try? FileDescriptorIO.writeAll(fd, bytes)
}

func setReceiveTimeout(_ fd: Int32, seconds: Int) {
    var tv = timeval(tv_sec: seconds, tv_usec: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
}
