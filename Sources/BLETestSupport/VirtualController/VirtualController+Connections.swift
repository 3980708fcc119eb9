import BLECore
import BLEWire

/// Links: creating, cancelling, updating and ending connections (Vol 4, Part E, 7.1 and 7.8;
/// Vol 6, Part B, 5.1), with the peer's side scriptable.
extension VirtualController {
    struct PendingConnection {
        let opcode: HCIOpcode
        /// The peer; with the Filter Accept List, the entry being connected once one advertises.
        var peer: LEAddress
        let parameters: LEConnectionParameters
        /// Initiator_Filter_Policy 0x01: connect to whichever device of the accept list advertises.
        var usesAcceptList = false
        var timer: (any ScheduledTimer)?
        /// The completion is on its way.
        var scheduled = false
    }

    /// Controller-side state of one connection, kept in `state.links` (only on the adapter queue).
    final class Link {
        let handle: UInt16
        let peer: LEAddress
        var parameters: ConnectionParameters
        var reassembler = ACLReassembler()
        var attLink: VirtualATTLink
        var txPHY: LEPHY = .le1M
        var rxPHY: LEPHY = .le1M
        var dataLength = DataLength()
        /// Host packets not yet reported by Number Of Completed Packets.
        var uncompleted = 0
        var dropATT = false
        /// Number Of Completed Packets withheld for this link (`holdCompletedPackets`).
        var holdsCompletions = false
        var timers: [any ScheduledTimer] = []

        init(handle: UInt16, peer: LEAddress, parameters: ConnectionParameters, attLink: VirtualATTLink) {
            self.handle = handle
            self.peer = peer
            self.parameters = parameters
            self.attLink = attLink
        }

        var snapshot: VirtualConnection {
            VirtualConnection(handle: handle, peer: peer, parameters: parameters, txPHY: txPHY, rxPHY: rxPHY,
                              dataLength: dataLength, uncompletedPackets: uncompleted)
        }
    }

    // MARK: - Public scripting

    /// Makes the next `count` connection attempts complete with `status` (for example 0x3E,
    /// Connection Failed to be Established) instead of connecting.
    public func failConnections(with status: HCIStatus, count: Int = 1) {
        onQueue { connectionFailures += Array(repeating: status, count: max(0, count)) }
    }

    /// The peer ends the link: Disconnection Complete with `reason` goes to the host
    /// (0x13 Remote User Terminated Connection by default; 0x08 for a supervision timeout).
    public func disconnect(_ peer: LEAddress, reason: HCIStatus = .remoteUserTerminatedConnection) throws(VirtualControllerError) {
        try onQueue { () throws(VirtualControllerError) in
            guard let link = links.values.first(where: { $0.peer == peer }) else { throw .notConnected(peer) }
            endLink(link, reason: reason)
        }
    }

    /// While `drop` is true, ATT PDUs from the central to `peer` are discarded: a peer that
    /// stops answering, so the central's ATT transaction timeout must fire.
    public func dropATT(for peer: LEAddress, _ drop: Bool = true) throws(VirtualControllerError) {
        try onQueue { () throws(VirtualControllerError) in
            guard let link = links.values.first(where: { $0.peer == peer }) else { throw .notConnected(peer) }
            link.dropATT = drop
        }
    }

    /// The connection handle of the link to `peer`, if connected.
    public func handle(of peer: LEAddress) -> UInt16? {
        onQueue { links.values.first { $0.peer == peer }?.handle }
    }

    // MARK: - Commands

    func createConnection(_ opcode: HCIOpcode, peer: LEAddress, _ parameters: LEConnectionParameters, usesAcceptList: Bool = false) {
        guard pending == nil, options.initiatesWhileScanning || scan == nil else { return status(opcode, .commandDisallowed) }
        guard usesAcceptList || !links.values.contains(where: { $0.peer == peer }) else { return status(opcode, HCIStatus(rawValue: 0x0B)) } // Connection Already Exists
        status(opcode, .success)
        pending = PendingConnection(opcode: opcode, peer: peer, parameters: parameters, usesAcceptList: usesAcceptList)
        if !connectionFailures.isEmpty {
            let failure = connectionFailures.removeFirst()
            pending?.scheduled = true
            let timer = after(options.connectionDelay) { $0.finishPending(status: failure) } // may run at once: assign after
            pending?.timer = timer
        } else {
            tryConnectPending()
        }
    }

    /// Completes the pending attempt when its peer is present and connectable; otherwise the
    /// attempt stays pending (the initiator keeps listening) until cancelled or the peer appears.
    func tryConnectPending() {
        guard let p = pending, p.timer == nil, !p.scheduled else { return }
        if p.usesAcceptList {
            // The first entry that advertises connectably and has no link yet.
            guard let entry = acceptList.first(where: { a in
                (peripheral(a)?.isConnectable ?? false) && !links.values.contains { $0.peer == a } && (peripheral(a)?.peripheralLink?.take(self) ?? true)
            }) else { return }
            pending?.peer = entry
        } else {
            guard let device = peripheral(p.peer), device.isConnectable, device.peripheralLink?.take(self) ?? true else { return }
        }
        pending?.scheduled = true
        let timer = after(options.connectionDelay) { $0.finishPending(status: .success) } // may run at once: assign after
        pending?.timer = timer
    }

    func cancelConnection(_ opcode: HCIOpcode) {
        guard let p = pending else { return complete(opcode, [HCIStatus.commandDisallowed.rawValue]) }
        p.timer?.cancel()
        pending = nil
        if p.scheduled, !links.values.contains(where: { $0.peer == p.peer }) { peripheral(p.peer)?.peripheralLink?.release(self) }
        complete(opcode, [0])
        sendConnectionComplete(status: .unknownConnectionIdentifier, handle: 0, peer: p.peer, parameters: p.parameters)
    }

    func finishPending(status: HCIStatus) {
        guard let p = pending else { return }
        pending = nil
        guard status == .success else {
            if !links.values.contains(where: { $0.peer == p.peer }) { peripheral(p.peer)?.peripheralLink?.release(self) }
            sendConnectionComplete(status: status, handle: 0, peer: p.peer, parameters: p.parameters)
            changed()
            return
        }
        let handle = nextHandle
        nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
        let params = ConnectionParameters(hciInterval: p.parameters.intervalMin, peripheralLatency: p.parameters.maxLatency,
                                          hciSupervisionTimeout: p.parameters.supervisionTimeout)
        let link = Link(handle: handle, peer: p.peer, parameters: params, attLink: VirtualATTLink(controller: self, handle: handle))
        links[handle] = link
        sendConnectionComplete(status: .success, handle: handle, peer: p.peer, parameters: p.parameters)
        peripheral(p.peer)?.attServer?.linkConnected(link.attLink)
        changed()
    }

    func sendConnectionComplete(status: HCIStatus, handle: UInt16, peer: LEAddress, parameters: LEConnectionParameters) {
        let interval = status == .success ? parameters.intervalMin : 0
        let latency = status == .success ? parameters.maxLatency : 0
        let timeout = status == .success ? parameters.supervisionTimeout : 0
        switch options.connectionCompleteEvent {
        case .legacy:
            send(.leConnectionComplete(.init(status: status, handle: handle, role: 0, peerAddressType: peer.type.rawValue,
                                             peerAddress: peer.address, connectionInterval: interval,
                                             peripheralLatency: latency, supervisionTimeout: timeout)))
        case .enhancedV1, .enhancedV2:
            let v2 = options.connectionCompleteEvent == .enhancedV2
            send(.leEnhancedConnectionComplete(.init(status: status, handle: handle, role: 0, peerAddressType: peer.type.rawValue,
                                                     peerAddress: peer.address, connectionInterval: interval,
                                                     peripheralLatency: latency, supervisionTimeout: timeout,
                                                     advertisingHandle: v2 ? 0xFF : nil, syncHandle: v2 ? 0xFFFF : nil)))
        }
    }

    /// Ends `link`: the server learns it, the host gets Disconnection Complete with `reason`.
    func endLink(_ link: Link, reason: HCIStatus) {
        links[link.handle] = nil
        link.timers.forEach { $0.cancel() }
        hostACLInFlight -= link.uncompleted
        link.uncompleted = 0
        send(.disconnectionComplete(.init(status: .success, handle: link.handle, reason: reason)))
        peripheral(link.peer)?.attServer?.linkDisconnected(link.attLink)
        peripheral(link.peer)?.peripheralLink?.release(self)
        changed()
        // The device advertises again: an attempt through the Filter Accept List that waits
        // may take it.
        tryConnectPending()
    }

    func interpretLinkCommand(_ command: HCICommandDecoded, _ opcode: HCIOpcode) {
        switch command {
        case .disconnect(let d):
            guard let link = links[d.handle] else { return status(opcode, .unknownConnectionIdentifier) }
            status(opcode, .success)
            // The initiating host is told Connection Terminated By Local Host (Vol 4, Part E, 7.1.6).
            endLink(link, reason: .connectionTerminatedByLocalHost)
        case .readRemoteVersionInformation(let h):
            guard links[h] != nil else { return status(opcode, .unknownConnectionIdentifier) }
            status(opcode, .success)
            send(.readRemoteVersionInformationComplete(.init(handle: h, version: options.hciVersion, companyIdentifier: options.manufacturer, subversion: 1)))
        case .readRSSI(let h):
            guard let link = links[h] else { return complete(opcode, [HCIStatus.unknownConnectionIdentifier.rawValue, UInt8(h & 0xFF), UInt8(h >> 8), 0]) }
            var rp: [UInt8] = [0]; rp.appendLE(h); rp.appendLE(peripheral(link.peer)?.rssi ?? -60)
            complete(opcode, rp)
        case .readEncryptionKeySize(let h):
            var rp: [UInt8] = [links[h] == nil ? HCIStatus.unknownConnectionIdentifier.rawValue : 0]; rp.appendLE(h)
            rp.append(options.encryptionKeySize)
            complete(opcode, rp)
        case .leConnectionUpdate(let u):
            guard let link = links[u.handle] else { return status(opcode, .unknownConnectionIdentifier) }
            status(opcode, .success)
            link.parameters = ConnectionParameters(hciInterval: u.parameters.intervalMax, peripheralLatency: u.parameters.maxLatency,
                                                   hciSupervisionTimeout: u.parameters.supervisionTimeout)
            send(.leConnectionUpdateComplete(.init(handle: u.handle, connectionInterval: link.parameters.hciInterval,
                                                   peripheralLatency: link.parameters.peripheralLatency,
                                                   supervisionTimeout: link.parameters.hciSupervisionTimeout)))
        case .leReadRemoteFeatures(let h):
            guard let link = links[h] else { return status(opcode, .unknownConnectionIdentifier) }
            status(opcode, .success)
            send(.leReadRemoteFeaturesComplete(.init(handle: h, features: peripheral(link.peer)?.features ?? [])))
        case .leSetDataLength(let d):
            var rp: [UInt8] = []
            guard let link = links[d.handle] else {
                rp.append(HCIStatus.unknownConnectionIdentifier.rawValue); rp.appendLE(d.handle)
                return complete(opcode, rp)
            }
            rp.append(0); rp.appendLE(d.handle)
            complete(opcode, rp)
            let peerSupports = peripheral(link.peer)?.features.contains(.leDataPacketLengthExtension) ?? false
            guard peerSupports else { return }
            let octets = min(max(d.txOctets, 27), options.maximumDataLength)
            let time = min(max(d.txTime, 328), 17040)
            let new = DataLength(maxTxOctets: octets, maxTxTime: time, maxRxOctets: options.maximumDataLength, maxRxTime: 2120)
            guard new != link.dataLength else { return }
            link.dataLength = new
            send(.leDataLengthChange(.init(handle: d.handle, maxTxOctets: new.maxTxOctets, maxTxTime: new.maxTxTime,
                                           maxRxOctets: new.maxRxOctets, maxRxTime: new.maxRxTime)))
        case .leReadPHY(let h):
            var rp: [UInt8] = []
            guard let link = links[h] else {
                rp.append(HCIStatus.unknownConnectionIdentifier.rawValue); rp.appendLE(h); rp += [0, 0]
                return complete(opcode, rp)
            }
            rp.append(0); rp.appendLE(h); rp += [link.txPHY.rawValue, link.rxPHY.rawValue]
            complete(opcode, rp)
        case .leSetPHY(let p):
            guard let link = links[p.handle] else { return status(opcode, .unknownConnectionIdentifier) }
            status(opcode, .success)
            // LE 2M where both sides have it and it is allowed, else LE Coded likewise, else LE 1M.
            let peerFeatures = peripheral(link.peer)?.features ?? []
            let both2M = options.leFeatures.contains(.le2MPHY) && peerFeatures.contains(.le2MPHY)
            let bothCoded = options.leFeatures.contains(.leCodedPHY) && peerFeatures.contains(.leCodedPHY)
            func pick(any: Bool, _ mask: UInt8) -> LEPHY {
                if both2M && (any || mask & 0b010 != 0) { return .le2M }
                if bothCoded && !any && mask & 0b100 != 0 { return .leCoded }
                return .le1M
            }
            let tx = pick(any: p.allPHYs & 1 != 0, p.txPHYs)
            let rx = pick(any: p.allPHYs & 2 != 0, p.rxPHYs)
            link.txPHY = tx
            link.rxPHY = rx
            send(.lePHYUpdateComplete(.init(handle: p.handle, txPHY: tx.rawValue, rxPHY: rx.rawValue)))
        case .leEnableEncryption(let e):
            guard links[e.handle] != nil else { return status(opcode, .unknownConnectionIdentifier) }
            status(opcode, .success)
            // The simulated peer holds no keys: PIN or Key Missing (0x06).
            send(.encryptionChange(.init(status: HCIStatus(rawValue: 0x06), handle: e.handle, encryptionEnabled: 0)))
        case .leLongTermKeyRequestReply(let r):
            var rp: [UInt8] = [links[r.handle] == nil ? HCIStatus.unknownConnectionIdentifier.rawValue : 0]; rp.appendLE(r.handle)
            complete(opcode, rp)
        case .leLongTermKeyRequestNegativeReply(let h):
            var rp: [UInt8] = [links[h] == nil ? HCIStatus.unknownConnectionIdentifier.rawValue : 0]; rp.appendLE(h)
            complete(opcode, rp)
        case .leRemoteConnectionParameterRequestReply(let r):
            var rp: [UInt8] = [links[r.handle] == nil ? HCIStatus.unknownConnectionIdentifier.rawValue : 0]; rp.appendLE(r.handle)
            complete(opcode, rp)
            if let link = links[r.handle] {
                link.parameters = ConnectionParameters(hciInterval: r.parameters.intervalMax, peripheralLatency: r.parameters.maxLatency,
                                                       hciSupervisionTimeout: r.parameters.supervisionTimeout)
                send(.leConnectionUpdateComplete(.init(handle: r.handle, connectionInterval: link.parameters.hciInterval,
                                                       peripheralLatency: link.parameters.peripheralLatency,
                                                       supervisionTimeout: link.parameters.hciSupervisionTimeout)))
            }
        case .leRemoteConnectionParameterRequestNegativeReply(let r):
            var rp: [UInt8] = [links[r.handle] == nil ? HCIStatus.unknownConnectionIdentifier.rawValue : 0]; rp.appendLE(r.handle)
            complete(opcode, rp)
        default:
            unknownCommand(opcode)
        }
    }
}
