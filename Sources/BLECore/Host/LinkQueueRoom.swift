/// The room a link's send queue has for more PDUs at one moment (`HCIHost.linkQueueRoom`):
/// PDUs and bytes below its bounds, and whether it is empty. An empty queue takes one PDU of
/// any size, so a PDU larger than the byte bound still goes; after it, both bounds hold.
struct LinkQueueRoom: Sendable {
    var pdus: Int
    var bytes: Int
    var isEmpty: Bool

    /// No bound: for a link that is gone, whose K-frames go nowhere.
    static let unbounded = LinkQueueRoom(pdus: .max, bytes: .max, isEmpty: true)

    /// Takes the room of one PDU of `bytes` bytes (basic header included); false, taking
    /// nothing, when it does not fit.
    mutating func take(bytes count: Int) -> Bool {
        guard isEmpty || (pdus > 0 && count <= bytes) else { return false }
        isEmpty = false
        pdus -= 1
        bytes -= count
        return true
    }
}
