import BLEWire

/// Looks up the LTK for a link the controller asks about: the peer, EDIV and Rand of the
/// LE Long Term Key Request; nil when there is no such key.
public typealias LongTermKeyProvider = @Sendable (_ peer: LEAddress, _ ediv: UInt16, _ rand: UInt64) -> UInt128?

/// LE Long Term Key Requests (Core Spec Vol 4, Part E, 7.7.65.5): the controller asks for the
/// key when the peer starts encryption on a link where this side is the peripheral.
extension Central {
    /// Installs where LTKs come from (a bond store); without one every request gets a
    /// negative reply, and the peer's encryption attempt fails cleanly (PIN or Key Missing).
    public func setLongTermKeyProvider(_ provider: LongTermKeyProvider?) {
        longTermKeyProvider = provider
    }

    func answerLongTermKeyRequest(_ e: HCIEvent.LELongTermKeyRequest) {
        let link = connectionsByHandle[e.handle]
        let own = link?.assumeIsolated { $0.longTermKeyRequested(ediv: e.ediv, rand: e.random) }
        if let key = own ?? link.flatMap({ longTermKeyProvider?($0.peer, e.ediv, e.random) }) {
            host.background { _ = try? await $0.send(HCICommand.leLongTermKeyRequestReply(handle: e.handle, longTermKey: key)) }
        } else {
            host.background { _ = try? await $0.send(HCICommand.leLongTermKeyRequestNegativeReply(handle: e.handle)) }
        }
    }
}
