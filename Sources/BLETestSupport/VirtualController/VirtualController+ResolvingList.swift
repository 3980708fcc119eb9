import BLECore
import BLEWire

/// The resolving list (Vol 4, Part E, 7.8.38, 7.8.40, 7.8.41, 7.8.44, 7.8.45) of a controller
/// with LL Privacy, and the resolvable private addresses it makes for advertising sets with
/// Own_Address_Type 0x02 or 0x03 (7.8.53): from the local IRK of the entry that Peer_Address
/// and Peer_Address_Type name, through `Options.makeResolvablePrivateAddress`.
extension VirtualController {
    /// Opcodes of the resolving list commands this controller implements with LL Privacy.
    static let resolvingListOpcodes: [UInt16] = [0x2027, 0x2029, 0x202A, 0x202D, 0x202E]

    func interpretResolvingListCommand(_ packet: HCICommandPacket) {
        let opcode = packet.opcode
        let p = packet.parameters
        // 7.8.38, 7.8.40: not while address resolution is on and advertising or scanning runs.
        if [0x2027, 0x2029].contains(opcode.rawValue), addressResolutionEnabled,
           scan != nil || pending != nil || advertisers.values.contains(where: \.isEnabled) {
            return complete(opcode, [HCIStatus.commandDisallowed.rawValue])
        }
        switch opcode.rawValue {
        case 0x2027:
            var r = ByteReader(p, context: "HCI_LE_Add_Device_To_Resolving_List")
            guard let type = try? r.u8(), type <= 0x01, let address = try? r.address(), let peerIRK = try? r.bytes(16), let localIRK = try? r.bytes(16),
                  (try? r.expectEnd()) != nil else { return complete(opcode, [0x12]) }
            let identity = LEAddress(address, type: type == 0x01 ? .random : .public)
            let key = { (octets: [UInt8]) -> UInt128 in octets.reversed().reduce(UInt128(0)) { $0 << 8 | UInt128($1) } }
            let local = key(localIRK)
            let entry = ResolvingListEntry(identity: identity, peerIRK: key(peerIRK), localIRK: local == 0 ? nil : local)
            // Invalid HCI Command Parameters for an identity already listed; Memory Capacity Exceeded past the size.
            guard !resolvingList.contains(where: { $0.identity == identity }) else { return complete(opcode, [0x12]) }
            guard resolvingList.count < Int(options.resolvingListSize) else { return complete(opcode, [0x07]) }
            resolvingList.append(entry)
            complete(opcode, [0x00])
        case 0x2029:
            guard p.isEmpty else { return complete(opcode, [0x12]) }
            resolvingList.removeAll()
            complete(opcode, [0x00])
        case 0x202A:
            guard p.isEmpty else { return complete(opcode, [0x12]) }
            complete(opcode, [0x00, options.resolvingListSize])
        case 0x202D:
            guard p.count == 1, p[0] <= 0x01 else { return complete(opcode, [0x12]) }
            addressResolutionEnabled = p[0] == 0x01
            complete(opcode, [0x00])
        default: // 0x202E: RPA_Timeout 0x0001 to 0x0E10 seconds.
            guard p.count == 2, (0x0001...0x0E10).contains(UInt16(p[0]) | UInt16(p[1]) << 8) else { return complete(opcode, [0x12]) }
            resolvablePrivateAddressTimeout = .seconds(Int(UInt16(p[0]) | UInt16(p[1]) << 8))
            complete(opcode, [0x00])
        }
    }

    /// The address set `set` advertises with once enabled (Vol 4, Part E, 7.8.53): the public
    /// address (0x00, and 0x02 without a matching entry), the set's random address (0x01, and
    /// 0x03 without a matching entry), or a resolvable private address made from the local IRK
    /// of the resolving-list entry that Peer_Address_Type and Peer_Address name (0x02, 0x03,
    /// address resolution on). Nil when 0x01 or 0x03 need a random address the host never set. `made`: the controller made it from a local IRK.
    func advertisingAddress(of set: VirtualAdvertisingSet) -> (address: LEAddress?, made: Bool) {
        let random = (set.legacyCommands ? randomAddress : set.randomAddress).map { LEAddress($0, type: .random) }
        switch set.ownAddressType {
        case 0x00: return (LEAddress(address, type: .public), false)
        case 0x01: return (random, false)
        default:
            let identity = LEAddress(set.peerAddress, type: set.peerAddressType == 0x01 ? .random : .public)
            if addressResolutionEnabled, let make = options.makeResolvablePrivateAddress,
               let irk = resolvingList.first(where: { $0.identity == identity })?.localIRK {
                return (LEAddress(make(irk), type: .random), true)
            }
            return (set.ownAddressType == 0x02 ? LEAddress(address, type: .public) : random, false)
        }
    }

    /// The resolving list now, in the order the host added it.
    public var resolvingListEntries: [ResolvingListEntry] { onQueue { resolvingList } }
    /// Whether the host turned address resolution on (LE Set Address Resolution Enable).
    public var isAddressResolutionEnabled: Bool { onQueue { addressResolutionEnabled } }
}
