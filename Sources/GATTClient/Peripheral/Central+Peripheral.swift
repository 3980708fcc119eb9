import BLEWire
import BLECore
extension Central {
    /// Connects to `peer` and returns its `Peripheral`: discovery happens on first use.
    ///
    ///     let hrm = try await central.peripheral(address, reconnect: .always(maxAttempts: 5), cache: cache)
    public func peripheral(
        _ peer: LEAddress, timeout: Duration = .seconds(15), reconnect: ReconnectPolicy = .never,
        cache: GATTCache? = nil, clientMTU: UInt16 = 517,
        procedureTimeout: Duration? = GATTProcedures.defaultProcedureTimeout
    ) async throws(GATTError) -> Peripheral {
        let link: Connection
        do { link = try await connect(peer, timeout: timeout, reconnect: reconnect) } catch { throw .connection(error) }
        return try await Peripheral(connection: link, cache: cache, clientMTU: clientMTU, procedureTimeout: procedureTimeout)
    }
}
