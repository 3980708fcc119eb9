import BLEWire
extension Central {
    /// The address link `handle`, made as central, has on this side (SMP's A1/IA in pairing,
    /// Vol 3, Part H, 2.2.3 and 2.2.7): the resolvable private address the controller made for
    /// it, else the random address the controller holds when the own address is random, else
    /// the controller's public address.
    func linkOwnAddress(handle: UInt16) -> LEAddress? {
        if let made = ownAddress.linkLocalPrivateAddresses[handle] { return LEAddress(made, type: .random) }
        if ownAddress.policy.ownAddressType == 0x01, let random = ownAddress.randomAddress { return LEAddress(random, type: .random) }
        return publicAddress
    }

    /// The controller's public address, once it reported it.
    var publicAddress: LEAddress? { controllerInfo.map { LEAddress($0.address, type: .public) } }
}
