import BLECore
import BLEWire

/// One advertising set as the virtual controller holds it. A controller without extended
/// advertising has one set, handle 0, driven by the legacy commands.
public struct VirtualAdvertisingSet: Sendable, Hashable {
    public var handle: UInt8
    /// Made with the legacy commands (7.8.5 to 7.8.9).
    public var legacyCommands: Bool
    /// Advertising_Event_Properties (legacy types mapped to their legacy-PDU properties).
    public var properties: HCICommand.AdvertisingEventProperties
    /// Interval in 0.625 ms units.
    public var interval: UInt32
    public var ownAddressType: UInt8
    /// Peer_Address_Type and Peer_Address: the directed target, or with Own_Address_Type 0x02
    /// or 0x03 the resolving-list entry whose local IRK makes the set's addresses (7.8.53).
    public var peerAddressType: UInt8 = 0
    public var peerAddress: BluetoothAddress = .zero
    public var randomAddress: BluetoothAddress?
    /// The address the set's PDUs carry since it was last enabled; nil while it never was.
    public var advertisingAddress: LEAddress?
    /// The resolvable private address the controller made for the set from a local IRK when
    /// it was last enabled (Own_Address_Type 0x02 or 0x03 with a matching entry), else nil.
    public var controllerMadeAddress: BluetoothAddress?
    public var data: [UInt8] = []
    public var scanResponse: [UInt8] = []
    public var isEnabled = false
    /// Duration in 10 ms units and event limit of the last enable (0: none).
    public var duration: UInt16 = 0
    public var maxEvents: UInt8 = 0
}

/// Advertising: legacy (Vol 4, Part E, 7.8.5 to 7.8.9) and extended sets (7.8.52 to 7.8.59),
/// and remote centrals that connect to them (7.7.65.1, 7.7.65.10, 7.7.65.18).
extension VirtualController {
    /// The advertising sets, by handle.
    public var advertisingSets: [VirtualAdvertisingSet] {
        onQueue { advertisers.values.sorted { $0.handle < $1.handle } }
    }

    /// A remote central at `central` connects to the enabled connectable set (the first one
    /// when several are): LE (Enhanced) Connection Complete with Role 0x01 goes to the host,
    /// then, for an extended set, LE Advertising Set Terminated; the set stops advertising.
    /// Returns the new link's handle.
    ///
    ///     let handle = try vc.connectFromCentral(LEAddress("C0:00:00:00:00:01", type: .random)!)
    @discardableResult
    public func connectFromCentral(_ central: LEAddress, interval: UInt16 = 24, supervisionTimeout: UInt16 = 72) throws(VirtualControllerError) -> UInt16 {
        try onQueue { () throws(VirtualControllerError) -> UInt16 in
            guard let set = advertisers.values.sorted(by: { $0.handle < $1.handle }).first(where: { $0.isEnabled && $0.properties.contains(.connectable) }) else {
                throw .notAdvertising
            }
            let handle = nextHandle
            nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
            let params = ConnectionParameters(hciInterval: interval, peripheralLatency: 0, hciSupervisionTimeout: supervisionTimeout)
            links[handle] = Link(handle: handle, peer: central, parameters: params, attLink: VirtualATTLink(controller: self, handle: handle))
            advertisers[set.handle]?.isEnabled = false
            switch options.connectionCompleteEvent {
            case .legacy:
                send(.leConnectionComplete(.init(handle: handle, role: 0x01, peerAddressType: central.type.rawValue, peerAddress: central.address,
                                                 connectionInterval: interval, supervisionTimeout: supervisionTimeout)))
            case .enhancedV1, .enhancedV2:
                let v2 = options.connectionCompleteEvent == .enhancedV2
                send(.leEnhancedConnectionComplete(.init(handle: handle, role: 0x01, peerAddressType: central.type.rawValue, peerAddress: central.address,
                                                         localResolvablePrivateAddress: set.controllerMadeAddress ?? .zero, connectionInterval: interval, supervisionTimeout: supervisionTimeout,
                                                         advertisingHandle: v2 ? (set.legacyCommands ? 0xFF : set.handle) : nil, syncHandle: v2 ? 0xFFFF : nil)))
            }
            if !set.legacyCommands {
                send(.leAdvertisingSetTerminated(.init(advertisingHandle: set.handle, connectionHandle: handle)))
            }
            changed()
            return handle
        }
    }

    // MARK: - Commands

    /// Handles the advertising commands; false for any other command.
    func interpretAdvertising(_ command: HCICommandDecoded, _ opcode: HCIOpcode) -> Bool {
        switch command {
        case .leSetAdvertisingParameters(let p):
            guard legacyAllowed(opcode) else { return true }
            guard advertisers[0]?.isEnabled != true else { fail(opcode, .commandDisallowed); return true }
            // Vol 4, Part E, 7.8.5: ADV_IND, ADV_DIRECT_IND (high), ADV_SCAN_IND, ADV_NONCONN_IND, ADV_DIRECT_IND (low).
            let table: [HCICommand.AdvertisingEventProperties] = [.legacyConnectable, [.legacy, .connectable, .directed, .highDutyCycleDirected],
                                                                  .legacyScannable, .legacyNonConnectable, [.legacy, .connectable, .directed]]
            guard p.advertisingType < 5, p.intervalMin <= p.intervalMax, p.intervalMin >= 0x20, p.intervalMax <= 0x4000 else {
                fail(opcode, HCIStatus(rawValue: 0x12)); return true
            }
            var set = advertisers[0] ?? VirtualAdvertisingSet(handle: 0, legacyCommands: true, properties: [], interval: 0, ownAddressType: 0)
            set.properties = table[Int(p.advertisingType)]
            set.interval = UInt32(p.intervalMax)
            set.ownAddressType = p.ownAddressType
            set.peerAddressType = p.peerAddressType
            set.peerAddress = p.peerAddress
            advertisers[0] = set
            usedAdvertisingFamily = .legacy
            complete(opcode, [0])
        case .leSetAdvertisingData(let d), .leSetScanResponseData(let d):
            guard legacyAllowed(opcode) else { return true }
            var set = advertisers[0] ?? VirtualAdvertisingSet(handle: 0, legacyCommands: true, properties: .legacyConnectable, interval: 0x800, ownAddressType: 0)
            if case .leSetAdvertisingData = command { set.data = d.data } else { set.scanResponse = d.data }
            advertisers[0] = set
            usedAdvertisingFamily = .legacy
            complete(opcode, [0])
        case .leSetAdvertisingEnable(let on):
            guard legacyAllowed(opcode) else { return true }
            var set = advertisers[0] ?? VirtualAdvertisingSet(handle: 0, legacyCommands: true, properties: .legacyConnectable, interval: 0x800, ownAddressType: 0)
            if on {
                guard takeAdvertisingAddress(&set) else { fail(opcode, HCIStatus(rawValue: 0x12)); return true }
            }
            set.isEnabled = on
            advertisers[0] = set
            usedAdvertisingFamily = .legacy
            complete(opcode, [0])
        case .leSetAdvertisingSetRandomAddress(let handle, let address):
            guard extendedAllowed(opcode) else { return true }
            guard advertisers[handle] != nil else { fail(opcode, .unknownAdvertisingIdentifier); return true }
            advertisers[handle]?.randomAddress = address
            complete(opcode, [0])
        case .leSetExtendedAdvertisingParameters(let p):
            guard extendedAllowed(opcode) else { return true }
            if let existing = advertisers[p.handle], existing.isEnabled { fail(opcode, .commandDisallowed); return true }
            if advertisers[p.handle] == nil, advertisers.count >= Int(options.advertisingSets) { fail(opcode, .memoryCapacityExceeded); return true }
            guard p.handle <= 0xEF, p.primaryIntervalMin <= p.primaryIntervalMax, p.primaryIntervalMin >= 0x20,
                  !(p.properties.contains(.connectable) && p.properties.contains(.scannable) && !p.properties.contains(.legacy)) else {
                fail(opcode, HCIStatus(rawValue: 0x12)); return true
            }
            var set = advertisers[p.handle] ?? VirtualAdvertisingSet(handle: p.handle, legacyCommands: false, properties: [], interval: 0, ownAddressType: 0)
            set.properties = p.properties
            set.interval = p.primaryIntervalMax
            set.ownAddressType = p.ownAddressType
            set.peerAddressType = p.peerAddressType
            set.peerAddress = p.peerAddress
            advertisers[p.handle] = set
            // Selected_TX_Power: the request capped at the controller's 10 dBm, 0 dBm with no preference.
            let selected: Int8 = p.txPower == 0x7F ? 0 : min(p.txPower, 10)
            complete(opcode, [0, UInt8(bitPattern: selected)])
        case .leSetExtendedAdvertisingData(let d), .leSetExtendedScanResponseData(let d):
            guard extendedAllowed(opcode) else { return true }
            let scanResponse: Bool
            if case .leSetExtendedScanResponseData = command { scanResponse = true } else { scanResponse = false }
            guard var set = advertisers[d.handle] else { fail(opcode, .unknownAdvertisingIdentifier); return true }
            var data = scanResponse ? set.scanResponse : set.data
            switch d.operation {
            case .complete, .firstFragment: data = d.data
            case .intermediateFragment, .lastFragment: data += d.data
            case .unchanged: break
            }
            let limit = set.properties.contains(.legacy) ? 31 : Int(options.maximumAdvertisingDataLength)
            guard data.count <= limit else { fail(opcode, set.properties.contains(.legacy) ? HCIStatus(rawValue: 0x12) : .memoryCapacityExceeded); return true }
            if scanResponse { set.scanResponse = data } else { set.data = data }
            advertisers[d.handle] = set
            complete(opcode, [0])
        case .leSetExtendedAdvertisingEnable(let e):
            guard extendedAllowed(opcode) else { return true }
            if !e.enable, e.sets.isEmpty {
                for h in advertisers.keys { advertisers[h]?.isEnabled = false }
                complete(opcode, [0]); return true
            }
            guard e.sets.allSatisfy({ advertisers[$0.handle] != nil }) else { fail(opcode, .unknownAdvertisingIdentifier); return true }
            if e.enable {
                var sets = advertisers
                for s in e.sets where sets[s.handle].map({ !$0.isEnabled }) == true {
                    guard takeAdvertisingAddress(&sets[s.handle]!) else { fail(opcode, HCIStatus(rawValue: 0x12)); return true }
                }
                advertisers = sets
            }
            complete(opcode, [0])
            for s in e.sets {
                advertisers[s.handle]?.isEnabled = e.enable
                advertisers[s.handle]?.duration = e.enable ? s.duration : 0
                advertisers[s.handle]?.maxEvents = e.enable ? s.maxExtendedAdvertisingEvents : 0
                if e.enable, s.duration > 0 { scheduleAdvertisingTimeout(handle: s.handle, duration: s.duration) }
            }
        case .leReadMaximumAdvertisingDataLength:
            guard extendedAllowed(opcode) else { return true }
            var rp: [UInt8] = [0]; rp.appendLE(options.maximumAdvertisingDataLength)
            complete(opcode, rp)
        case .leReadNumberOfSupportedAdvertisingSets:
            guard extendedAllowed(opcode) else { return true }
            complete(opcode, [0, options.advertisingSets])
        case .leRemoveAdvertisingSet(let handle):
            guard extendedAllowed(opcode) else { return true }
            guard let set = advertisers[handle] else { fail(opcode, .unknownAdvertisingIdentifier); return true }
            guard !set.isEnabled else { fail(opcode, .commandDisallowed); return true }
            advertisers[handle] = nil
            complete(opcode, [0])
        default:
            return false
        }
        return true
    }

    /// The address `set` advertises with from its enable on; false (Invalid HCI Command
    /// Parameters, 7.8.9, 7.8.56) when Own_Address_Type 0x03 finds neither an entry nor a
    /// random address.
    private func takeAdvertisingAddress(_ set: inout VirtualAdvertisingSet) -> Bool {
        let (address, made) = advertisingAddress(of: set)
        if address == nil, set.ownAddressType == 0x03 { return false }
        set.advertisingAddress = address
        set.controllerMadeAddress = made ? address?.address : nil
        return true
    }

    /// Vol 4, Part E, 3.1.1: once the host used one family of advertising commands, the other
    /// is refused with Command Disallowed until HCI_Reset.
    private func legacyAllowed(_ opcode: HCIOpcode) -> Bool {
        guard usedAdvertisingFamily != .extended else { fail(opcode, .commandDisallowed); return false }
        return true
    }

    private func extendedAllowed(_ opcode: HCIOpcode) -> Bool {
        guard usedAdvertisingFamily != .legacy else { fail(opcode, .commandDisallowed); return false }
        usedAdvertisingFamily = .extended
        return true
    }

    /// The set's Duration ran out: Advertising Set Terminated with Advertising Timeout (0x3C).
    private func scheduleAdvertisingTimeout(handle: UInt8, duration: UInt16) {
        advertisingGeneration &+= 1
        let generation = advertisingGeneration
        after(.milliseconds(Int(duration) * 10)) { vc in
            guard vc.advertisingGeneration == generation, vc.advertisers[handle]?.isEnabled == true else { return }
            vc.advertisers[handle]?.isEnabled = false
            vc.send(.leAdvertisingSetTerminated(.init(status: HCIStatus(rawValue: 0x3C), advertisingHandle: handle, connectionHandle: 0)))
        }
    }
}

/// The family of advertising commands the host chose (Vol 4, Part E, 3.1.1).
enum AdvertisingFamily { case legacy, extended }

extension HCIStatus {
    /// Unknown Advertising Identifier (0x42).
    static let unknownAdvertisingIdentifier = HCIStatus(rawValue: 0x42)
}
