import BLEWire

/// A controller that reports a Hardware Error (Vol 4, Part E, 7.7.16), or that the host
/// resets with HCI_Reset (7.3.2), keeps none of its links and stops scanning. The host
/// forgets all of it at once, so nothing waits for a controller that will never answer;
/// once the adapter is powered on again, reconnect policies restore their links and the
/// scan runs again for its subscribers.
extension Central {
    enum ControllerReset {
        /// The controller reported Hardware Error `code`: the application (or the backend)
        /// powers the adapter on again, which resets it.
        case hardwareError(code: UInt8)
        /// `powerOn()` is about to send HCI_Reset.
        case reset
    }

    /// Clears every piece of host state the controller lost: pending commands (after a
    /// Hardware Error), ACL links, credits and queues, the scanner's applied state, the
    /// pending connection attempt. Every connection reports `.disconnected`; one with a
    /// reconnect policy waits for the adapter (`adapterPoweredOn`), the others close.
    func controllerWasReset(_ cause: ControllerReset) {
        let reason: String, linkReason: HCIStatus
        switch cause {
        case .hardwareError(let code):
            reason = "the controller reported Hardware Error \(code.hex); call powerOn() to reset it"
            linkReason = .hardwareFailure
            if let peer = pendingConnect?.peer { failPendingConnect(.command(peer: peer, .hardwareError(code: code))) }
        case .reset:
            reason = "the controller is being reset"
            linkReason = .connectionTerminatedByLocalHost
            // After a Hardware Error the host has done this itself before passing the event on.
            host.assumeIsolated { $0.clearControllerState(hardwareError: nil) }
            failPendingConnect(.adapterNotReady(.resetting))
        }
        scanner.controllerReset()
        advertisingLost(reason)
        setState(.resetting, reason: reason)
        connectionsByHandle.removeAll()
        for connection in Array(connectionsByPeer.values) {
            connection.assumeIsolated { $0.controllerReset(reason: linkReason) }
        }
        if case .hardwareError = cause, options.resetAfterHardwareError {
            // A task of the host's: `close()` waits for it.
            host.background { [weak self] _ in
                do {
                    _ = try await self?.powerOn()
                } catch {
                    self?.options.logger.log(.error, "resetting the controller after its Hardware Error failed: \(error)")
                }
            }
        }
    }

    /// The controller is set up again: restores that waited for it go on.
    func adapterPoweredOn() {
        for connection in Array(connectionsByPeer.values) {
            connection.assumeIsolated { $0.adapterPoweredOn() }
        }
    }
}
