import BLECore
import BLEWire

extension VirtualController {
    /// `central` advertises `data`, `remote` connects to it from the air, and the
    /// peripheral-role link the central accepted: where tests of the peripheral role start.
    ///
    ///     let link = try await vc.acceptConnection(on: central, advertising: data, from: remoteCentral)
    package func acceptConnection(on central: Central, advertising data: AdvertisingData,
                                  parameters: AdvertisingParameters = AdvertisingParameters(),
                                  from remote: LEAddress) async throws -> Connection {
        var incoming = await central.incomingConnections().makeAsyncIterator()
        _ = try await central.startAdvertising(data, parameters: parameters)
        try connectFromCentral(remote)
        guard let link = await incoming.next() else { throw NoIncomingConnection(remote: remote) }
        return link
    }
}

/// The central's incoming connections ended (closed, or the task cancelled) before the link
/// from `remote` came.
package struct NoIncomingConnection: Error, CustomStringConvertible {
    package let remote: LEAddress
    package var description: String {
        "no incoming connection from \(remote): the central's incomingConnections() ended first (central closed or task cancelled)"
    }
}
