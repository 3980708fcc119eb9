import BLEWire

extension HCIAdapters {
    /// Makes the kernel bond when it pairs on adapter hciN: Set Bondable (opcode 0x0009,
    /// 0x01) on the management interface, as bluetoothd does at start. The kernel then sets
    /// Bonding_Flags in its Pairing Request (Vol 3, Part H, 3.5.1), takes the peer's keys and
    /// keeps the Long Term Key after the link ends, so a later connection (any socket, any
    /// process) encrypts with it instead of pairing again. Without it (the kernel's state when
    /// no bluetoothd ever ran) the kernel pairs without bonding (no Bonding_Flags, no keys
    /// distributed), yet keeps that pairing's Long Term Key as well and encrypts a later link
    /// to the peer with it (Debian's 6.1 kernel). The kernel keeps its keys in memory only,
    /// until the adapter goes away or they are removed (`removeBond`); bluetoothd saves them
    /// under /var/lib/bluetooth and loads them again at start. Works with the adapter up or
    /// down; needs CAP_NET_ADMIN.
    ///
    ///     try HCIAdapters.enableBonding(index: 0)
    public static func enableBonding(index: Int, enabled: Bool = true, timeout: Duration = .seconds(5)) throws(TransportError) {
        try managementCommand(0x0009, "Set Bondable", index: index, parameters: [enabled ? 0x01 : 0x00], timeout: timeout)
    }

    /// Tells the kernel what a person can do when it pairs on adapter hciN (Set IO Capability,
    /// opcode 0x0018), which decides the association model it picks (Vol 3, Part H, 2.3.5.1).
    /// The kernel starts as no input, no output: Just Works only, so BT_SECURITY high cannot be
    /// reached. `KernelPairingAgent(index:ioCapability:answer:)` sets this for its agent, as
    /// bluetoothd does when an agent registers. Needs CAP_NET_ADMIN.
    ///
    ///     try HCIAdapters.setIOCapability(.keyboardDisplay, index: 0)
    public static func setIOCapability(_ capability: KernelPairingAgent.IOCapability, index: Int, timeout: Duration = .seconds(5)) throws(TransportError) {
        try managementCommand(0x0018, "Set IO Capability", index: index, parameters: [capability.rawValue], timeout: timeout)
    }

    /// Removes the kernel's keys for `peer` on adapter hciN and ends a link to it (Unpair
    /// Device, opcode 0x001B, Disconnect 0x01): the next connection that asks for security
    /// pairs again. True when there were keys; false when the kernel had none (Not Paired).
    /// The adapter must be up (else `.managementRefused` with status 0x0F, Not Powered).
    ///
    ///     try HCIAdapters.removeBond(index: 0, peer: peer)
    @discardableResult
    public static func removeBond(index: Int, peer: LEAddress, timeout: Duration = .seconds(5)) throws(TransportError) -> Bool {
        let status = try managementCommand(0x001B, "Unpair Device \(peer)", index: index, parameters: managementAddress(peer) + [0x01],
                                           accepting: [managementStatusNotPaired], timeout: timeout)
        return status == 0x00
    }
}
