import GATTServer

/// Long runs (soak tests) drive the test beds through millions of packets; their records of
/// every packet would grow without end and hide the stack's own memory use. These drop them.
extension VirtualController {
    /// Forgets the recorded commands, ACL packets, L2CAP frames and events (the counters of
    /// flow-control violations stay).
    ///
    ///     if cycle % 100 == 0 { vc.clearRecords() }
    public func clearRecords() {
        onQueue {
            commands.removeAll()
            aclPackets.removeAll()
            framesReceived.removeAll()
            framesSent.removeAll()
            events.removeAll()
        }
    }
}

extension GATTServer {
    /// Forgets the received opcodes and the applied writes.
    public func clearRecords() async {
        await onQueue {
            self.records.log.removeAll()
            self.records.writes.removeAll()
        }
    }
}
