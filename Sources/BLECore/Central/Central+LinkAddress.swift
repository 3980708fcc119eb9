import BLEWire
extension Central {
    /// The address a link made now has on this side (SMP's A1/IA in pairing, Vol 3, Part H,
    /// 2.2.3 and 2.2.7): the random address the controller holds when the own address is
    /// random, else the controller's public address.
    var linkOwnAddress: LEAddress? {
        if ownAddress.policy.ownAddressType == 0x01, let random = ownAddress.randomAddress { return LEAddress(random, type: .random) }
        return controllerInfo.map { LEAddress($0.address, type: .public) }
    }
}
