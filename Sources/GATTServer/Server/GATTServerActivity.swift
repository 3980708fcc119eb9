import GATTClient
import BLEWire
import SMP

/// What a client did on a `GATTServer`, as `activity()` reports it: a bearer came or went,
/// a value was read, a value was written (applied), a CCCD was written. Values and peers come
/// from the air: escape them before printing.
///
///     for await event in await server.activity() { if case .wrote(_, _, let uuid, let value) = event { print(uuid, value) } }
public enum GATTServerActivity: Sendable, Hashable {
    /// A client's ATT bearer started (`peer` is the link's `centralDescription`).
    case connected(peer: String)
    /// A client's ATT bearer ended.
    case disconnected(peer: String)
    /// A Read, Read Blob (`offset`), Read Multiple or Read Multiple Variable Length request
    /// read the attribute at `handle`; `value` is the whole value it had.
    case read(peer: String, handle: UInt16, uuid: BluetoothUUID, offset: Int, value: [UInt8])
    /// A Write Request, Write Command, Signed Write Command or Execute Write stored `value`
    /// at `handle` (a CCCD write is `subscribed` instead).
    case wrote(peer: String, handle: UInt16, uuid: BluetoothUUID, value: [UInt8])
    /// A client wrote the CCCD of `characteristic` (value handle `valueHandle`):
    /// bit 0 notifications, bit 1 indications (Vol 3, Part G, 3.3.3.3).
    case subscribed(peer: String, characteristic: BluetoothUUID, valueHandle: UInt16, configuration: UInt16)
    /// The bond store refused to save what the server keeps of the bonded client `peer` (its
    /// CCCDs, Client Supported Features and change awareness); `error` names the file and the
    /// errno. The server keeps the state while it runs and saves it again at its next change;
    /// after a restart the client gets what the store last kept.
    case bondNotSaved(peer: LEAddress, error: BondStoreError)
}

extension GATTServer {
    /// Every client's reads, writes and subscriptions from now on, and its bearer coming and
    /// going. Each subscriber keeps at most `limit` events it has not taken yet; older ones
    /// are dropped first.
    ///
    ///     for await event in await server.activity() { log(event) }
    public func activity(limit: Int = 256) async -> AsyncStream<GATTServerActivity> {
        let (stream, continuation) = AsyncStream.makeStream(of: GATTServerActivity.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
        await onQueue {
            let id = self.nextActivityObserver
            self.nextActivityObserver += 1
            self.activityObservers[id] = continuation
            let queue = self.queue
            continuation.onTermination = { [weak self] _ in
                guard let server = self else { return }
                queue.async { server.activityObservers[id] = nil }
            }
        }
        return stream
    }

    /// Tells every activity subscriber (on the queue).
    func report(_ event: GATTServerActivity) {
        for c in activityObservers.values { c.yield(event) }
    }

    /// Reports what a store at `handle` did: a CCCD write is a subscription, others a write.
    func reportStore(_ value: [UInt8], handle: UInt16, link id: ObjectIdentifier) {
        guard !activityObservers.isEmpty, let peer = links[id]?.link.centralDescription, let i = table.index(of: handle) else { return }
        let a = table.attributes[i]
        if case .cccd(let valueHandle, _) = a.kind {
            let characteristic = table.index(of: valueHandle).map { table.attributes[$0].type } ?? a.type
            let configuration = UInt16(value[0]) | UInt16(value[1]) << 8
            report(.subscribed(peer: peer, characteristic: characteristic, valueHandle: valueHandle, configuration: configuration))
        } else {
            report(.wrote(peer: peer, handle: handle, uuid: a.type, value: value))
        }
    }
}
