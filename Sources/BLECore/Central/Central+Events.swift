import BLEWire

/// Routing of link-related HCI events to connections.
extension Central {
    func handleConnectionEvent(_ event: HCIEvent) {
        switch event {
        case .leConnectionComplete(let e):
            connectionCompleted(status: e.status, handle: e.handle, role: e.role, peer: e.peer,
                                parameters: ConnectionParameters(hciInterval: e.connectionInterval, peripheralLatency: e.peripheralLatency, hciSupervisionTimeout: e.supervisionTimeout))
        case .leEnhancedConnectionComplete(let e):
            connectionCompleted(status: e.status, handle: e.handle, role: e.role, peer: e.peer,
                                parameters: ConnectionParameters(hciInterval: e.connectionInterval, peripheralLatency: e.peripheralLatency, hciSupervisionTimeout: e.supervisionTimeout),
                                localPrivateAddress: e.localResolvablePrivateAddress == .zero ? nil : e.localResolvablePrivateAddress,
                                advertisingHandle: e.advertisingHandle)
        case .disconnectionComplete(let e):
            disconnectionCompleted(handle: e.handle, status: e.status, reason: e.reason)
            if e.status == .success { peripheralLinkEnded(handle: e.handle) }
        case .leAdvertisingSetTerminated(let e):
            advertisingSetTerminated(e)
        case .leConnectionUpdateComplete(let e):
            guard e.status == .success, let c = connectionsByHandle[e.handle] else { return }
            let p = ConnectionParameters(hciInterval: e.connectionInterval, peripheralLatency: e.peripheralLatency, hciSupervisionTimeout: e.supervisionTimeout)
            c.assumeIsolated { $0.parameters = p; $0.emit(.parametersUpdated(p)) }
        case .leDataLengthChange(let e):
            guard let c = connectionsByHandle[e.handle] else { return }
            let d = DataLength(maxTxOctets: e.maxTxOctets, maxTxTime: e.maxTxTime, maxRxOctets: e.maxRxOctets, maxRxTime: e.maxRxTime)
            c.assumeIsolated { $0.dataLength = d; $0.emit(.dataLengthChanged(d)) }
        case .lePHYUpdateComplete(let e):
            guard e.status == .success, let c = connectionsByHandle[e.handle] else { return }
            let tx = LEPHY(rawValue: e.txPHY) ?? .le1M, rx = LEPHY(rawValue: e.rxPHY) ?? .le1M
            c.assumeIsolated { $0.phy = (tx, rx); $0.emit(.phyChanged(tx: tx, rx: rx)) }
        case .leReadRemoteFeaturesComplete(let e):
            if e.status == .success { remoteFeaturesRead(handle: e.handle, features: e.features) }
        case .leRemoteConnectionParameterRequest(let e):
            // Vol 4, Part E, 7.7.65.6: accept valid requests (subject to the policy) with the
            // requested values, reject the rest.
            let range = ConnectionParameterRange(minimumInterval: e.intervalMin, maximumInterval: e.intervalMax, peripheralLatency: e.maxLatency, supervisionTimeout: e.timeout)
            let accept = range.isValid && (options.parameterUpdatePolicy?(e.handle, range) ?? true)
            let command = accept
                ? HCICommand.leRemoteConnectionParameterRequestReply(handle: e.handle, range.hciParameters)
                : HCICommand.leRemoteConnectionParameterRequestNegativeReply(handle: e.handle, reason: HCIStatus(rawValue: 0x3B))
            host.background { _ = try? await $0.send(command) }
        case .leLongTermKeyRequest(let e):
            answerLongTermKeyRequest(e)
        case .encryptionChange(let e):
            guard let c = connectionsByHandle[e.handle] else { return }
            c.assumeIsolated { $0.encryptionChanged(e) }
        case .encryptionKeyRefreshComplete(let status, let handle):
            guard let c = connectionsByHandle[handle] else { return }
            c.assumeIsolated { $0.keyRefreshCompleted(status: status) }
        case .hardwareError(let code):
            // Vol 4, Part E, 7.7.16: the controller failed and needs a reset.
            controllerWasReset(.hardwareError(code: code))
        case .unknown(let code, let parameters):
            options.logger.log(.debug, "unhandled event \(code.hex) [\(parameters.hexString())]")
        case .leUnknown(let subevent, let parameters):
            options.logger.log(.debug, "unhandled LE subevent \(subevent.hex) [\(parameters.hexString())]")
        default:
            break
        }
    }
}

extension HCICommand.LECreateConnection {
    /// LE Create Connection to `peer` with the application's parameters (own address public).
    init(peer: LEAddress, request p: ConnectionRequestParameters) {
        self.init(scanInterval: p.hciScanInterval, scanWindow: p.hciScanWindow, peer: peer, connection: p.hciConnection)
    }
}

extension HCICommand.LEExtendedCreateConnection {
    /// LE Extended Create Connection to `peer` with the application's parameters on the
    /// initiating PHYs of `p.phy`: LE 1M (plus LE 2M connection parameters for `.le2M`), or LE
    /// Coded alone when `coded` (the controller has the LE Coded PHY).
    init(peer: LEAddress, request p: ConnectionRequestParameters, coded: Bool) {
        let phy = HCICommand.LEInitiatingPHYParameters(scanInterval: p.hciScanInterval, scanWindow: p.hciScanWindow, connection: p.hciConnection)
        switch p.phy {
        case .leCoded where coded: self.init(peer: peer, le1M: nil, leCoded: phy)
        case .le2M: self.init(peer: peer, le1M: phy, le2M: phy)
        default: self.init(peer: peer, le1M: phy)
        }
    }
}
