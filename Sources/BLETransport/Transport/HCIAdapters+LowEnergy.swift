import BLEWire

extension HCIAdapters {
    /// Enables LE on adapter hciN through the kernel's management interface (Set Low Energy,
    /// opcode 0x000D, on HCI_CHANNEL_CONTROL), as bluetoothd does at start. Without bluetoothd
    /// the kernel connects LE links but has no SMP channel, so it cannot pair and BT_SECURITY
    /// is not reached. The kernel registers SMP when it powers the adapter on with the
    /// management interface in use: call this while the adapter is down, then bring it up.
    /// Needs CAP_NET_ADMIN; waits at most `timeout` for the kernel's answer.
    ///
    ///     try HCIAdapters.enableLowEnergy(index: 0)
    ///     try HCIAdapters.bringUp(index: 0)
    public static func enableLowEnergy(index: Int, timeout: Duration = .seconds(5)) throws(TransportError) {
        try managementCommand(0x000D, "Set Low Energy", index: index, parameters: [0x01], timeout: timeout)
    }

    /// Lets the kernel pair with LE Secure Connections (P-256 ECDH, Vol 3, Part H, 2.3.5.6)
    /// on adapter hciN: Set Secure Connections (opcode 0x002D, enabled = 0x01) on the
    /// management interface, as bluetoothd does by default. Without it the kernel pairs with
    /// LE legacy pairing. Call it after `enableLowEnergy(index:)`, while the adapter is down.
    /// Needs CAP_NET_ADMIN; waits at most `timeout` for the kernel's answer.
    ///
    ///     try HCIAdapters.enableSecureConnections(index: 0)
    public static func enableSecureConnections(index: Int, timeout: Duration = .seconds(5)) throws(TransportError) {
        try managementCommand(0x002D, "Set Secure Connections", index: index, parameters: [0x01], timeout: timeout)
    }
}
