extension Peripheral {
    /// Ends the link to the peer (no reconnect follows, whatever the policy): pending calls
    /// and notification streams end with `.disconnected`. A peripheral over a bare channel
    /// (not a connection) has no link to end and returns at once.
    ///
    ///     try await peripheral.disconnect()
    public func disconnect(timeout: Duration = .seconds(5)) async throws(GATTError) {
        guard let connection else { return }
        do { try await connection.disconnect(timeout: timeout) } catch { throw .connection(error) }
    }
}
