/// The power state a controller other than an adapter reports (the seed's `CentralBackend`,
/// module BLESeed), taken by the central.
extension Central {
    /// Takes the state a backend reports: `.poweredOn` brings the controller up over HCI;
    /// `.poweredOff`, `.unauthorized`, `.unsupported` and `.unknown` end every link (no
    /// reconnect) and take that state; `.resetting` and `.transportLost` are taken as they are.
    package func follow(_ reported: AdapterState) async {
        switch reported {
        case .poweredOn:
            guard state != .poweredOn else { return }
            _ = try? await powerOn()
        case .resetting, .transportLost:
            setState(reported, reason: "the backend reported \(reported)")
        case .poweredOff, .unauthorized, .unsupported, .unknown:
            guard state != reported else { return }
            await goDown(to: reported, reason: "the adapter is \(reported)")
        }
    }

    /// Ends every link, as the loss of the radio does, takes `new` as the state and lets the
    /// scans end or wait (`Scanner.adapterDown`).
    func goDown(to new: AdapterState, reason: String) async {
        failPendingConnect(.adapterNotReady(new))
        endAllLinks(reason: reason)
        setState(new, reason: reason)
        await scanner.adapterDown(new)
    }
}
