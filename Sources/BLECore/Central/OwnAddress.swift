import BLEWire

/// The address this side uses on the air (Vol 6, Part B, 1.3): the central's scans and
/// connections (`Central.setOwnAddress`) and each advertising set
/// (`AdvertisingParameters.ownAddress`). Own_Address_Type 0x00 (the controller's public
/// address) or 0x01 (a random address: LE Set Random Address, Vol 4, Part E, 7.8.4, or an
/// advertising set's own, 7.8.52); resolvable private addresses become 0x03 when the
/// controller's resolving list holds the local IRK (`Central.loadResolvingList`): the
/// controller then makes them itself, the host's address is only its fallback.
///
///     try await central.setOwnAddress(.staticRandom(try bonds.staticRandomAddress()))
public enum OwnAddress: Sendable, CustomStringConvertible {
    /// The controller's public address.
    case `public`
    /// A static random address (1.3.2.1: the two most significant bits 1), kept for as long as
    /// the adapter is used (SMP's `FileBondStore.staticRandomAddress()` keeps one per adapter).
    case staticRandom(BluetoothAddress)
    /// Resolvable private addresses (1.3.2.2), a new one from `generate` every `rotation`
    /// (SMP's `OwnAddress.resolvablePrivate(irk:rotation:)` makes them from the local IRK).
    case resolvablePrivate(rotation: Duration, generate: @Sendable () -> BluetoothAddress)

    /// The default time between two resolvable private addresses (Vol 3, Part C, Appendix A,
    /// T_GAP(private_addr_int): 15 minutes).
    public static let defaultRotation: Duration = .seconds(900)

    /// Own_Address_Type: 0x00 public, 0x01 random.
    public var ownAddressType: UInt8 {
        if case .public = self { return 0x00 }
        return 0x01
    }

    public var description: String {
        switch self {
        case .public: return "public"
        case .staticRandom(let a): return "static random \(a)"
        case .resolvablePrivate(let rotation, _): return "resolvable private, rotated every \(rotation.millisecondsDescription)"
        }
    }
}

/// Why `Central.setOwnAddress` failed.
public enum OwnAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The address given as static random does not have its two most significant bits set, or
    /// its other 46 bits are all 0 or all 1 (Vol 6, Part B, 1.3.2.1).
    case notStaticRandom(BluetoothAddress)
    /// The controller refused LE Set Random Address, or the adapter is not powered on.
    case command(HCIError)
    /// The calling task was cancelled while it waited for a connection attempt to end.
    case cancelled

    public var description: String {
        switch self {
        case .notStaticRandom(let a):
            return "\(a) is no static random address: its two most significant bits must be 1 and the other 46 bits neither all 0 nor all 1"
        case .command(let error):
            return "setting the own address failed: \(error)"
        case .cancelled:
            return "setting the own address was cancelled"
        }
    }
}

extension BluetoothAddress {
    /// Whether this is a valid static random address (Vol 6, Part B, 1.3.2.1).
    public var isStaticRandom: Bool {
        let random = rawValue & 0x3FFF_FFFF_FFFF
        return rawValue >> 46 == 0b11 && random != 0 && random != 0x3FFF_FFFF_FFFF && rawValue >> 48 == 0
    }

    /// A new static random address: 46 random bits, the two most significant bits 1.
    public static func randomStatic() -> BluetoothAddress {
        while true {
            let a = BluetoothAddress(rawValue: UInt64.random(in: 0...0x3FFF_FFFF_FFFF) | 0xC000_0000_0000)
            if a.isStaticRandom { return a }
        }
    }
}

/// What the central uses as its own address now.
struct OwnAddressState {
    var policy: OwnAddress = .public
    /// The random address the controller holds (LE Set Random Address), if any.
    var randomAddress: BluetoothAddress?
    var rotationTimer: (any ScheduledTimer)?
    /// The controller's resolving list holds the local IRK with address resolution on
    /// (`Central.loadResolvingList`): with resolvable private addresses it makes them itself
    /// for the peers on the list (Own_Address_Type 0x03).
    var controllerGeneratesPrivateAddresses = false
    /// The resolving list holds the local IRK for advertising (`ResolvingListEntry.advertising`)
    /// with address resolution on: sets with resolvable private addresses use Own_Address_Type
    /// 0x03 and the controller makes their addresses.
    var advertisingIRKOnList = false
    /// Local_Resolvable_Private_Address of LE Enhanced Connection Complete (Vol 4, Part E,
    /// 7.7.65.10) by Connection_Handle, when the controller made the link with an address of
    /// its own making.
    var linkLocalPrivateAddresses: [UInt16: BluetoothAddress] = [:]

    /// Own_Address_Type of the scan and create-connection commands: 0x03 (the controller's
    /// resolvable private address for peers on its resolving list, the host's random address
    /// for the others) where the controller makes them, else the policy's 0x00 or 0x01.
    /// 0x03 and not 0x02: a peer off the list sees the host's private address, never the
    /// public one.
    var scanAndConnectType: UInt8 {
        if case .resolvablePrivate = policy, controllerGeneratesPrivateAddresses { return 0x03 }
        return policy.ownAddressType
    }
}

extension Central {
    /// Own_Address_Type of the scan and create-connection commands: 0x00 public, 0x01 random,
    /// 0x03 resolvable private addresses the controller makes from its resolving list (with
    /// the host's random address for peers not on it).
    public var ownAddressType: UInt8 { ownAddress.scanAndConnectType }
    /// The random address the controller uses now, nil with a public own address.
    public var currentRandomAddress: BluetoothAddress? { ownAddress.randomAddress }

    /// Scans and connects with `policy` from now on (and after every power-on): sets the random
    /// address at the controller (the scan paused and no connection attempt pending around
    /// it, as LE Set Random Address requires), and for resolvable private addresses a new one
    /// every rotation. While the adapter is not powered on it is applied at the next power-on.
    ///
    ///     try await central.setOwnAddress(.staticRandom(BluetoothAddress("C1:22:33:44:55:66")!))
    public func setOwnAddress(_ policy: OwnAddress) async throws(OwnAddressError) {
        if case .staticRandom(let a) = policy, !a.isStaticRandom { throw .notStaticRandom(a) }
        ownAddress.rotationTimer?.cancel()
        ownAddress.rotationTimer = nil
        ownAddress.policy = policy
        if case .public = policy { ownAddress.randomAddress = nil }
        guard state == .poweredOn else { return }
        try await applyOwnAddress()
    }

    /// Sets the policy's address at the controller, with nothing scanning or initiating.
    func applyOwnAddress() async throws(OwnAddressError) {
        let placeholder = LEAddress(.zero, type: .public)
        do throws(ConnectionError) {
            try await acquireConnectTurn(placeholder)
        } catch {
            throw .cancelled
        }
        await scanner.pause()
        var failure: OwnAddressError?
        do throws(HCIError) {
            try await setRandomAddressForPolicy()
        } catch {
            failure = .command(error)
        }
        scanner.ownAddressType = ownAddress.scanAndConnectType
        await scanner.resume()
        releaseConnectTurn()
        if let failure { throw failure }
    }

    /// LE Set Random Address for the policy (a new resolvable private address, and the timer
    /// for the next); nothing for a public address. Called with nothing scanning or initiating.
    func setRandomAddressForPolicy() async throws(HCIError) {
        let address: BluetoothAddress
        switch ownAddress.policy {
        case .public:
            return
        case .staticRandom(let a):
            address = a
        case .resolvablePrivate(let rotation, let generate):
            address = generate()
            ownAddress.rotationTimer?.cancel()
            ownAddress.rotationTimer = scheduler.schedule(after: rotation) { [weak self] in
                self?.assumeIsolated { central in central.rotateOwnAddress() }
            }
        }
        try await host.send(HCICommand.leSetRandomAddress(address))
        controllerRandomAddressChanged(to: address)
        options.logger.log(.debug, "own address: \(address) (\(ownAddress.policy))")
    }

    /// LE Set Random Address went out (for the central or for a legacy advertising set): the
    /// controller has one random address for scanning, connecting and legacy advertising, so
    /// every user of it that is random now has this one.
    func controllerRandomAddressChanged(to address: BluetoothAddress) {
        if ownAddress.policy.ownAddressType == 0x01 { ownAddress.randomAddress = address }
        for set in advertising.sets.values where !set.usesExtendedCommands && set.parameters.ownAddress.ownAddressType == 0x01 {
            set.status.value.address = LEAddress(address, type: .random)
        }
    }

    /// The controller's resolving list holds the local IRK (or no longer does): the scanner's
    /// Own_Address_Type follows from the next scan on.
    func setControllerGeneratesPrivateAddresses(_ on: Bool) {
        ownAddress.controllerGeneratesPrivateAddresses = on
        scanner.ownAddressType = ownAddress.scanAndConnectType
    }

    /// The rotation timer fired: a new resolvable private address.
    private func rotateOwnAddress() {
        guard state == .poweredOn, case .resolvablePrivate = ownAddress.policy else { return }
        let logger = options.logger
        host.background { [weak self] _ in
            do throws(OwnAddressError) {
                try await self?.applyOwnAddress()
            } catch {
                logger.log(.warning, "rotating the resolvable private address: \(error)")
            }
        }
    }

    /// At power-on, before the scan runs: the policy's random address again (the controller
    /// was reset), and the scanner's Own_Address_Type.
    func restoreOwnAddress() async {
        // The reset emptied the resolving list.
        ownAddress.controllerGeneratesPrivateAddresses = false
        ownAddress.advertisingIRKOnList = false
        ownAddress.linkLocalPrivateAddresses.removeAll()
        do throws(HCIError) {
            try await setRandomAddressForPolicy()
        } catch {
            options.logger.log(.warning, "LE Set Random Address at power-on: \(error); scanning and connecting with the public address")
            ownAddress.policy = .public
            ownAddress.randomAddress = nil
        }
        scanner.ownAddressType = ownAddress.scanAndConnectType
    }
}
