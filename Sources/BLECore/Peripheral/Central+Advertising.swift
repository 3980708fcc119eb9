import BLEWire

/// Advertising sets: legacy commands (Vol 4, Part E, 7.8.5 to 7.8.9) on controllers without
/// extended advertising, the extended set commands (7.8.52 to 7.8.59) on the others, so that
/// the scanner's extended commands and the sets never mix the two families (Vol 4, Part E, 3.1.1).
extension Central {
    /// Starts an advertising set with `data` (and `scanResponse` for scannable sets). Checks
    /// the lengths (31 octets for legacy PDUs; the controller's maximum for extended ones) and
    /// the controller's set limit before anything is sent. A central that connects to the set
    /// gives a peripheral-role `Connection`, offered by `incomingConnections()` and by the
    /// set's `events()`. Cancelling the calling task while the commands are under way throws
    /// `.cancelled` and leaves nothing advertising: what was enabled is disabled and an
    /// extended set is removed.
    ///
    ///     let data = AdvertisingData([.flags([.leGeneralDiscoverable, .brEDRNotSupported]), .completeLocalName("demo")])
    ///     let set = try await central.startAdvertising(data, parameters: AdvertisingParameters(duration: .seconds(30)))
    public func startAdvertising(_ data: AdvertisingData, scanResponse: AdvertisingData? = nil,
                                 parameters: AdvertisingParameters = AdvertisingParameters()) async throws(AdvertisingError) -> AdvertisingSet {
        guard state == .poweredOn, let info = controllerInfo else { throw .adapterNotReady(state) }
        let extendedCommands = info.supportsExtendedAdvertising
        let adBytes = data.bytes, srBytes = scanResponse?.bytes ?? []
        try checkKind(parameters, advertisingData: adBytes, scanResponse: srBytes, extendedCommands: extendedCommands)
        let maximum = parameters.format == .legacy ? 31 : try await maximumAdvertisingDataLength()
        if adBytes.count > maximum { throw .dataTooLong(scanResponse: false, length: adBytes.count, maximum: maximum, format: parameters.format) }
        if srBytes.count > maximum { throw .dataTooLong(scanResponse: true, length: srBytes.count, maximum: maximum, format: parameters.format) }
        let limit = extendedCommands ? try await supportedAdvertisingSets() : 1
        guard advertising.sets.count + advertising.reserved.count < limit, let handle = advertising.freeHandle(limit: limit) else {
            throw .setLimitReached(sets: limit)
        }
        if Task.isCancelled { throw .cancelled }
        // Reserved until the set is live, or until what a failed start sent is undone.
        advertising.reserved.insert(handle)
        let random = parameters.ownAddress.firstRandomAddress()
        // With the local IRK on the resolving list the controller makes the set's resolvable
        // private addresses (Own_Address_Type 0x03, Peer_Address 00:00:00:00:00:00 public
        // naming that entry); `random` stays the set's address for when no entry matches.
        let controllerMakesAddresses = parameters.ownAddress.isResolvablePrivate && ownAddress.advertisingIRKOnList
        let ownAddressType: UInt8 = controllerMakesAddresses ? 0x03 : parameters.ownAddress.ownAddressType
        var progress = StartProgress()
        var selectedTxPower: Int8?
        do throws(HCIError) {
            if extendedCommands {
                selectedTxPower = try await startExtendedSet(handle, parameters, adBytes, srBytes, random: random, ownAddressType: ownAddressType, &progress)
            } else {
                try await startLegacySet(parameters, adBytes, srBytes, random: random, ownAddressType: ownAddressType, &progress)
            }
        } catch {
            await undoStart(handle, extendedCommands: extendedCommands, progress)
            throw error.isCancellation ? .cancelled : .command(error)
        }
        guard state == .poweredOn else {
            advertising.reserved.remove(handle)
            throw .adapterNotReady(state)
        }
        // Cancelled after the last command completed: the set is on, and undone all the same.
        if Task.isCancelled {
            await undoStart(handle, extendedCommands: extendedCommands, progress)
            throw .cancelled
        }
        advertising.reserved.remove(handle)
        let address = random.map { LEAddress($0, type: .random) } ?? publicAddress
        let set = AdvertisingSet(central: self, handle: handle, parameters: parameters, usesExtendedCommands: extendedCommands,
                                 selectedTxPower: selectedTxPower, address: address, controllerMakesAddresses: controllerMakesAddresses)
        advertising.sets[handle] = set
        if parameters.ownAddress.isResolvablePrivate {
            options.logger.log(.debug, controllerMakesAddresses
                ? "advertising set \(handle): the controller makes its resolvable private addresses from the local IRK on its resolving list (Own_Address_Type 0x03)"
                : "advertising set \(handle): the host makes its resolvable private addresses (Own_Address_Type 0x01)")
        }
        if !extendedCommands { startLegacyDuration(set) }
        scheduleAddressRotation(handle)
        options.logger.log(.info, "advertising set \(handle) started (\(parameters.format == .legacy ? "legacy" : "extended") PDUs, \(adBytes.count)+\(srBytes.count) octets, \(address.map { "\($0.address)" } ?? "public address"))")
        return set
    }

    /// How far a start got: which commands may have taken effect at the controller.
    struct StartProgress {
        /// LE Set Extended Advertising Parameters went out: the set exists at the controller.
        var setCreated = false
        /// The enable command went out: the controller may be advertising.
        var enableSent = false
    }

    /// A start failed or was cancelled: disables what may have been enabled and removes the
    /// set, in a task of its own (the caller may be cancelled), before the start throws.
    private func undoStart(_ handle: UInt8, extendedCommands: Bool, _ progress: StartProgress) async {
        defer { advertising.reserved.remove(handle) }
        var commands: [HCICommandPacket] = []
        if progress.enableSent {
            commands.append(extendedCommands ? HCICommand.LESetExtendedAdvertisingEnable(enable: false, sets: [.init(handle: handle)]).packet
                                             : HCICommand.leSetAdvertisingEnable(false))
        }
        if extendedCommands, progress.setCreated { commands.append(HCICommand.leRemoveAdvertisingSet(handle: handle)) }
        guard !commands.isEmpty else { return }
        await Task { [host, logger = options.logger, commands] in
            for command in commands {
                do throws(HCIError) {
                    try await host.send(command)
                } catch {
                    logger.log(.debug, "undoing the start of advertising set \(handle): \(error)")
                }
            }
        }.value
    }

    /// Links that remote centrals opened to our advertising sets, as they are accepted: each
    /// a `Connection` with `role == .peripheral` and the usual lifecycle and events. Serve
    /// GATT on it through `Connection.attChannel()`.
    ///
    ///     for await link in await central.incomingConnections() { print(link.peer, link.role) }
    public func incomingConnections(bufferingPolicy: StreamBufferingPolicy = .unbounded) -> AsyncStream<Connection> {
        advertising.incoming.subscribe(bufferingPolicy: bufferingPolicy)
    }

    /// The live advertising sets.
    public var advertisingSets: [AdvertisingSet] { advertising.sets.keys.sorted().compactMap { advertising.sets[$0] } }

    // MARK: - Checks and controller limits

    private func checkKind(_ p: AdvertisingParameters, advertisingData ad: [UInt8], scanResponse sr: [UInt8], extendedCommands: Bool) throws(AdvertisingError) {
        if p.format == .extended, !extendedCommands {
            throw .unsupported("the controller has no extended advertising (LE feature LE Extended Advertising, HCI_LE_Set_Extended_Advertising_Parameters): use legacy advertising, at most 31 octets")
        }
        if p.maximumEvents != nil, !extendedCommands {
            throw .unsupported("an advertising event limit needs a controller with extended advertising; use a duration instead")
        }
        if p.maximumEvents == 0 { throw .invalidParameter(field: "maximumEvents", reason: "must be 1 to 255, or nil for no limit") }
        let units = p.hciInterval
        let maxUnits: UInt32 = p.format == .legacy ? 0x4000 : 0xFF_FFFF
        guard units >= 0x20, units <= maxUnits else {
            throw .invalidParameter(field: "interval", reason: "\(p.interval) is outside 20 ms to \(p.format == .legacy ? "10.24 s" : "10485 s")")
        }
        if let d = p.duration, d <= .zero || d > .milliseconds(655_350) {
            throw .invalidParameter(field: "duration", reason: "\(d) is outside 10 ms to 655.35 s")
        }
        if let tx = p.txPower, tx < -127 || tx > 20 { throw .invalidParameter(field: "txPower", reason: "\(tx) dBm is outside -127 to 20") }
        if case .staticRandom(let a) = p.ownAddress, !a.isStaticRandom {
            throw .invalidParameter(field: "ownAddress", reason: OwnAddressError.notStaticRandom(a).description)
        }
        switch (p.kind, p.format) {
        case (.nonConnectable, _) where !sr.isEmpty:
            throw .invalidParameter(field: "scanResponse", reason: "a non-connectable set answers no scan requests: use kind .scannable to send a scan response")
        case (.connectable, .extended) where !sr.isEmpty:
            throw .invalidParameter(field: "scanResponse", reason: "an extended connectable set cannot be scannable (Vol 4, Part E, 7.8.53): put everything in the advertising data")
        case (.scannable, .extended) where !ad.isEmpty:
            throw .invalidParameter(field: "advertisingData", reason: "an extended scannable set carries its data in the scan response only (Vol 4, Part E, 7.8.54)")
        default:
            break
        }
    }

    /// LE Read Maximum Advertising Data Length (7.8.57), read once per controller.
    func maximumAdvertisingDataLength() async throws(AdvertisingError) -> Int {
        if let known = advertising.maximumDataLength { return known }
        do throws(HCIError) {
            let r = try await host.read(HCIReturn.LEReadMaximumAdvertisingDataLength.self, HCICommand.leReadMaximumAdvertisingDataLength())
            // Vol 4, Part E, 7.8.57: 0x001F to 0x0672.
            let length = min(max(Int(r.maximumLength), 31), 1650)
            advertising.maximumDataLength = length
            return length
        } catch {
            throw .command(error)
        }
    }

    /// LE Read Number of Supported Advertising Sets (7.8.58), read once per controller.
    func supportedAdvertisingSets() async throws(AdvertisingError) -> Int {
        if let known = advertising.supportedSets { return known }
        do throws(HCIError) {
            let r = try await host.read(HCIReturn.LEReadNumberOfSupportedAdvertisingSets.self, HCICommand.leReadNumberOfSupportedAdvertisingSets())
            let count = Int(min(r.count, 0xF0))
            advertising.supportedSets = count
            return count
        } catch {
            throw .command(error)
        }
    }

    // MARK: - Commands

    /// LE Set Random Address, Parameters, Data, Scan Response Data, Enable (7.8.4 to 7.8.9).
    private func startLegacySet(_ p: AdvertisingParameters, _ ad: [UInt8], _ sr: [UInt8], random: BluetoothAddress?, ownAddressType: UInt8,
                                _ progress: inout StartProgress) async throws(HCIError) {
        if let random {
            try await host.send(HCICommand.leSetRandomAddress(random))
            controllerRandomAddressChanged(to: random)
        }
        let type: UInt8 = switch p.kind { case .connectable: 0x00; case .scannable: 0x02; case .nonConnectable: 0x03 }
        let units = UInt16(clamping: p.hciInterval)
        try await host.send(HCICommand.leSetAdvertisingParameters(.init(intervalMin: units, intervalMax: units, advertisingType: type, ownAddressType: ownAddressType)))
        try await host.send(HCICommand.leSetAdvertisingData(ad))
        if p.kind != .nonConnectable { try await host.send(HCICommand.leSetScanResponseData(sr)) }
        progress.enableSent = true
        try await host.send(HCICommand.leSetAdvertisingEnable(true))
    }

    /// LE Set Extended Advertising Parameters, the set's random address, its data in
    /// fragments, and LE Set Extended Advertising Enable (7.8.52 to 7.8.56). Returns the
    /// transmit power the controller chose.
    private func startExtendedSet(_ handle: UInt8, _ p: AdvertisingParameters, _ ad: [UInt8], _ sr: [UInt8], random: BluetoothAddress?,
                                  ownAddressType: UInt8, _ progress: inout StartProgress) async throws(HCIError) -> Int8 {
        if !advertising.setTerminatedEventEnabled, options.resetController != false {
            // Bit 17: LE Advertising Set Terminated (subevent 0x12), added to the bring-up mask
            // only when a set needs it, so a session without extended sets sends what it always did.
            try await host.send(HCICommand.leSetEventMask(HCIHost.leEventMask | 1 << 0x11))
            advertising.setTerminatedEventEnabled = true
        }
        typealias Properties = HCICommand.AdvertisingEventProperties
        let properties: Properties = switch (p.kind, p.format) {
        case (.connectable, .legacy): .legacyConnectable
        case (.scannable, .legacy): .legacyScannable
        case (.nonConnectable, .legacy): .legacyNonConnectable
        case (.connectable, .extended): .connectable
        case (.scannable, .extended): .scannable
        case (.nonConnectable, .extended): []
        }
        let parameters = HCICommand.LESetExtendedAdvertisingParameters(
            handle: handle, properties: properties, primaryIntervalMin: p.hciInterval, primaryIntervalMax: p.hciInterval,
            ownAddressType: ownAddressType, txPower: p.txPower ?? 0x7F, sid: handle & 0x0F)
        progress.setCreated = true
        let selected = try await host.read(HCIReturn.LESetExtendedAdvertisingParameters.self, parameters.packet).selectedTxPower
        if let random {
            try await host.send(HCICommand.leSetAdvertisingSetRandomAddress(handle: handle, address: random))
        }
        if !(p.kind == .scannable && p.format == .extended) {
            for packet in HCICommand.LESetExtendedAdvertisingData.fragments(handle: handle, data: ad, scanResponse: false) { try await host.send(packet) }
        }
        if p.kind == .scannable || (p.kind == .connectable && p.format == .legacy) {
            for packet in HCICommand.LESetExtendedAdvertisingData.fragments(handle: handle, data: sr, scanResponse: true) { try await host.send(packet) }
        }
        progress.enableSent = true
        try await host.send(enableCommand(handle, p))
        return selected
    }

    func enableCommand(_ handle: UInt8, _ p: AdvertisingParameters) -> HCICommandPacket {
        HCICommand.LESetExtendedAdvertisingEnable(enable: true, sets: [
            .init(handle: handle, duration: p.hciDuration, maxExtendedAdvertisingEvents: p.maximumEvents ?? 0),
        ]).packet
    }

    /// Stops set `handle` at the controller and ends it with `.stopped`.
    func stopAdvertising(_ handle: UInt8) async throws(AdvertisingError) {
        guard let set = advertising.sets[handle] else { throw .notAdvertising(handle: handle) }
        let waitingForLink = advertising.resumeAfterLink.contains { $0.value == handle }
        endSet(handle, .stopped)
        do throws(HCIError) {
            if set.usesExtendedCommands {
                if !waitingForLink {
                    try await host.send(HCICommand.LESetExtendedAdvertisingEnable(enable: false, sets: [.init(handle: handle)]).packet)
                }
                try await host.send(HCICommand.leRemoveAdvertisingSet(handle: handle))
            } else if !waitingForLink {
                try await host.send(HCICommand.leSetAdvertisingEnable(false))
            }
        } catch {
            throw .command(error)
        }
    }

    /// Ends every set for `close()`: advertising stops at the controller, each set ends. The
    /// commands go out from a task of its own, so a caller cancelled (Ctrl-C) stops them too.
    func stopAllAdvertising() async {
        await Task { await self.stopEverySet() }.value
    }

    private func stopEverySet() async {
        for handle in advertising.sets.keys.sorted() {
            do throws(AdvertisingError) {
                try await stopAdvertising(handle)
            } catch {
                options.logger.log(.debug, "stopping advertising set \(handle): \(error)")
            }
        }
    }

    /// The set is over: it leaves the registry and tells its subscribers why.
    func endSet(_ handle: UInt8, _ reason: AdvertisingEndReason) {
        guard let set = advertising.sets.removeValue(forKey: handle) else { return }
        advertising.legacyTimers.removeValue(forKey: handle)?.cancel()
        advertising.rotationTimers.removeValue(forKey: handle)?.cancel()
        for (link, h) in advertising.resumeAfterLink where h == handle { advertising.resumeAfterLink[link] = nil }
        set.emit(.ended(reason))
    }

    private func removeSetInBackground(_ handle: UInt8) {
        let logger = options.logger
        host.background { host in
            do {
                try await host.send(HCICommand.leRemoveAdvertisingSet(handle: handle))
            } catch {
                logger.log(.debug, "LE Remove Advertising Set \(handle): \(error)")
            }
        }
    }

    /// Legacy commands have no duration: a host timer disables the set.
    private func startLegacyDuration(_ set: AdvertisingSet) {
        guard let duration = set.parameters.duration else { return }
        let handle = set.handle
        // The timer starts a task of the host's (`close()` waits for it), which runs on this
        // executor: it claims no isolation.
        advertising.legacyTimers[handle] = scheduler.schedule(after: duration) { [weak self, host] in
            host.background { [weak self] _ in await self?.legacyDurationElapsed(handle) }
        }
    }

    private func legacyDurationElapsed(_ handle: UInt8) async {
        guard advertising.sets[handle] != nil else { return }
        advertising.legacyTimers[handle] = nil
        endSet(handle, .durationElapsed)
        _ = try? await host.send(HCICommand.leSetAdvertisingEnable(false))
    }

    // MARK: - Events

    /// HCI_LE_Advertising_Set_Terminated (7.7.65.18).
    func advertisingSetTerminated(_ e: HCIEvent.LEAdvertisingSetTerminated) {
        switch e.status {
        case .success:
            guard let link = connectionsByHandle[e.connectionHandle] else { return }
            linkMade(on: e.advertisingHandle, link, handle: e.connectionHandle)
        case HCIStatus(rawValue: 0x3C):
            endSet(e.advertisingHandle, .durationElapsed)
            removeSetInBackground(e.advertisingHandle)
        case HCIStatus(rawValue: 0x43):
            endSet(e.advertisingHandle, .eventLimitReached)
            removeSetInBackground(e.advertisingHandle)
        default:
            endSet(e.advertisingHandle, .adapter("the controller stopped advertising set \(e.advertisingHandle): \(e.status)"))
            removeSetInBackground(e.advertisingHandle)
        }
    }

    /// A remote central connected to us (LE Connection Complete with Role 0x01): the link
    /// becomes a peripheral-role `Connection`. A legacy set stops advertising with it; an
    /// extended set learns it from Advertising Set Terminated, which follows.
    func acceptPeripheralLink(handle: UInt16, peer: LEAddress, parameters: ConnectionParameters, advertisingHandle: UInt8? = nil) {
        let link = Connection(central: self, host: host, peer: peer, handle: handle, parameters: parameters,
                              options: ConnectOptions(timeout: .seconds(15), reconnect: .never, parameters: .default), role: .peripheral)
        connectionsByHandle[handle] = link
        if connectionsByPeer[peer] == nil { connectionsByPeer[peer] = link }
        options.logger.log(.info, "\(peer) connected to us on handle \(handle.hex)")
        // Before anything can pair on the link: SMP takes this side's address from it.
        let own = peripheralLinkOwnAddress(handle: handle, advertisingHandle: advertisingHandle)
        link.ownLinkAddress = own
        link.emit(.connected(handle: handle, parameters: parameters))
        peripheralLinkSetup?(link)
        advertising.incoming.yield(link)
        if let legacy = advertising.sets.values.first(where: { !$0.usesExtendedCommands && $0.parameters.kind == .connectable }) {
            linkMade(on: legacy.handle, link, handle: handle)
        }
        startLinkSetup(link, handle: handle, parameters: .default)
    }

    private func linkMade(on setHandle: UInt8, _ link: Connection, handle: UInt16) {
        guard let set = advertising.sets[setHandle] else { return }
        if ownAddress.linkLocalPrivateAddresses[handle] == nil, let own = set.status.value.address {
            link.ownLinkAddress = own
        }
        advertising.legacyTimers.removeValue(forKey: setHandle)?.cancel()
        set.emit(.connected(link))
        if set.parameters.resumeAfterDisconnect {
            advertising.resumeAfterLink[handle] = setHandle
        } else {
            endSet(setHandle, .connected)
            if set.usesExtendedCommands { removeSetInBackground(setHandle) }
        }
    }

    /// Disconnection Complete for `handle`: a set waiting for that link advertises again.
    func peripheralLinkEnded(handle: UInt16) {
        guard let setHandle = advertising.resumeAfterLink.removeValue(forKey: handle), let set = advertising.sets[setHandle] else { return }
        let command = set.usesExtendedCommands ? enableCommand(setHandle, set.parameters) : HCICommand.leSetAdvertisingEnable(true)
        host.background { [weak self] host in
            do throws(HCIError) {
                try await host.send(command)
                await self?.advertisingResumed(setHandle)
            } catch {
                await self?.advertisingResumeFailed(setHandle, error)
            }
        }
    }

    private func advertisingResumed(_ handle: UInt8) {
        guard let set = advertising.sets[handle] else { return }
        if !set.usesExtendedCommands { startLegacyDuration(set) }
        set.emit(.resumed)
    }

    func advertisingResumeFailed(_ handle: UInt8, _ error: HCIError) {
        options.logger.log(.warning, "advertising set \(handle) could not advertise again after its link: \(error)")
        endSet(handle, .adapter("advertising again after the link failed: \(error)"))
    }

    /// The controller was reset or lost: every set is gone with it.
    func advertisingLost(_ why: String) {
        for handle in advertising.sets.keys.sorted() { endSet(handle, .adapter(why)) }
        advertising.forgetController()
    }
}
