import BLEWire

/// The addresses advertising sets use (Vol 6, Part B, 1.3): a set's first random address, a
/// new resolvable private address every rotation (LE Set Advertising Set Random Address,
/// Vol 4, Part E, 7.8.52, for an extended set; LE Set Random Address, 7.8.4, for legacy
/// commands), and this side's address on a link a central made to a set.
extension Central {
    /// Takes the set's next resolvable private address after its rotation. A set with a
    /// duration or an event limit keeps its first address: enabling it again would restart both.
    /// A set whose addresses the controller makes is rotated by the controller (LE Set
    /// Resolvable Private Address Timeout, Vol 4, Part E, 7.8.45).
    func scheduleAddressRotation(_ handle: UInt8) {
        guard let set = advertising.sets[handle], !set.controllerMakesAddresses,
              case .resolvablePrivate(let rotation, _) = set.parameters.ownAddress,
              set.parameters.duration == nil, set.parameters.maximumEvents == nil else { return }
        advertising.rotationTimers[handle]?.cancel()
        // The timer starts a task of the host's (`close()` waits for it), which runs on this
        // executor: it claims no isolation.
        advertising.rotationTimers[handle] = scheduler.schedule(after: rotation) { [weak self, host] in
            host.background { [weak self] _ in await self?.rotateAdvertisingAddress(handle) }
        }
    }

    /// A new resolvable private address for set `handle`: the set is disabled around the
    /// change (a controller refuses a new address for an enabled connectable set, and LE Set
    /// Random Address while legacy advertising is on), then enabled again unless it ended or
    /// a central connected meanwhile. A refused change keeps the old address until the next
    /// rotation.
    private func rotateAdvertisingAddress(_ handle: UInt8) async {
        advertising.rotationTimers[handle] = nil
        guard state == .poweredOn, let set = advertising.sets[handle], case .resolvablePrivate(_, let generate) = set.parameters.ownAddress else { return }
        let address = generate()
        let extended = set.usesExtendedCommands
        let disable = extended ? HCICommand.LESetExtendedAdvertisingEnable(enable: false, sets: [.init(handle: handle)]).packet : HCICommand.leSetAdvertisingEnable(false)
        let change = extended ? HCICommand.leSetAdvertisingSetRandomAddress(handle: handle, address: address) : HCICommand.leSetRandomAddress(address)
        let enable = extended ? enableCommand(handle, set.parameters) : HCICommand.leSetAdvertisingEnable(true)
        // A set waiting for its link to end is not advertising: only its address changes.
        let advertisingNow = isAdvertising(handle)
        do throws(HCIError) {
            if advertisingNow { try await host.send(disable) }
            try await host.send(change)
            advertisingAddressChanged(handle, to: address)
        } catch {
            options.logger.log(.warning, "advertising set \(handle) keeps its address until the next rotation: \(error)")
        }
        if advertisingNow {
            guard isAdvertising(handle) else { return }
            do throws(HCIError) {
                try await host.send(enable)
            } catch {
                advertisingResumeFailed(handle, error)
                return
            }
        }
        scheduleAddressRotation(handle)
    }

    /// The set is live and not waiting for its link to end.
    private func isAdvertising(_ handle: UInt8) -> Bool {
        advertising.sets[handle] != nil && !advertising.resumeAfterLink.values.contains(handle)
    }

    private func advertisingAddressChanged(_ handle: UInt8, to address: BluetoothAddress) {
        guard let set = advertising.sets[handle] else { return }
        if set.usesExtendedCommands {
            set.status.value.address = LEAddress(address, type: .random)
        } else {
            controllerRandomAddressChanged(to: address)
        }
        options.logger.log(.debug, "advertising set \(handle) now advertises as \(address)")
    }

    /// This side's address on peripheral link `handle`, for SMP (Vol 3, Part H, 2.2.3: the
    /// responder's address in c1, f5 and f6): the resolvable private address the controller
    /// made for it; else the address of the set the link came from (LE Enhanced Connection
    /// Complete v2 names it), or that all connectable sets share; nil when that is not
    /// known yet (the set's Advertising Set Terminated sets it).
    func peripheralLinkOwnAddress(handle: UInt16, advertisingHandle: UInt8?) -> LEAddress? {
        if let made = ownAddress.linkLocalPrivateAddresses[handle] { return LEAddress(made, type: .random) }
        if let advertisingHandle, advertisingHandle != 0xFF, let set = advertising.sets[advertisingHandle] {
            return set.status.value.address
        }
        let addresses = Set(advertising.sets.values.filter { $0.parameters.kind == .connectable }.compactMap { $0.status.value.address })
        return addresses.count == 1 ? addresses.first : nil
    }
}

extension OwnAddress {
    /// The random address a new advertising set starts with: the static one, a new
    /// resolvable private one; nil for the public address.
    func firstRandomAddress() -> BluetoothAddress? {
        switch self {
        case .public: return nil
        case .staticRandom(let address): return address
        case .resolvablePrivate(_, let generate): return generate()
        }
    }

    var isResolvablePrivate: Bool {
        if case .resolvablePrivate = self { return true }
        return false
    }
}
