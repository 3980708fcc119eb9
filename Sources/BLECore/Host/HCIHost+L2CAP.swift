import BLEWire

/// The complete L2CAP PDUs the inlet leaves to the host (`ACLInlet.receive` delivers to the
/// registered fixed channels itself), and the host's own answers on the LE signaling (0x0005)
/// and Security Manager (0x0006) channels (Core Spec Vol 3, Parts A and H).
extension HCIHost {
    func routeL2CAP(link: Link, channelID: UInt16, payload: ArraySlice<UInt8>) {
        switch channelID {
        case L2CAPChannelID.leSignaling:
            handleSignaling(link: link, payload: Array(payload))
        case L2CAPChannelID.securityManager:
            handleSecurityManager(link: link, payload: payload)
        default:
            if let channel = link.channels[channelID] ?? (channelID == L2CAPChannelID.att ? fixedChannel(handle: link.handle, channelID: channelID) : nil) {
                channel.deliver(payload)
            } else {
                logLimited(.unsupportedChannel, .info, "\(link.peer.address): dropping \(payload.count) bytes on unsupported L2CAP channel \(channelID.hex)")
            }
        }
    }

    /// What to do with a peripheral's Connection Parameter Update Request.
    public func setParameterUpdatePolicy(_ policy: @escaping @Sendable (UInt16, ConnectionParameterRange) -> Bool) {
        parameterUpdatePolicy = policy
    }

    func handleSignaling(link: Link, payload: [UInt8]) {
        let command: L2CAPSignalingCommand
        do {
            command = try L2CAPSignalingCommand(bytes: payload)
        } catch {
            logLimited(.malformedSignaling, .warning, "\(link.peer.address): malformed LE signaling command [\(payload.prefix(32).hexString())]: \(error)")
            let id = payload.count > 1 ? payload[1] : 0
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: id, body: .commandReject(reason: 0x0000, data: [])))
            return
        }
        switch command.body {
        case .connectionParameterUpdateRequest(let range):
            // Every request gets its response (Vol 3, Part A, 4.21); the updates themselves
            // are coalesced per link (`parameterUpdateAccepted`).
            let accept = range.isValid && (parameterUpdatePolicy?(link.handle, range) ?? true)
            logLimited(.parameterUpdate, .info, "\(link.peer.address): peer asks for interval \(range.minimumInterval)-\(range.maximumInterval), latency \(range.peripheralLatency), timeout \(range.supervisionTimeout): \(accept ? "accepted" : "rejected")")
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: command.identifier, body: .connectionParameterUpdateResponse(result: accept ? 0 : 1)))
            if accept { parameterUpdateAccepted(link: link, range) }
        case .commandReject(let reason, _):
            logLimited(.signalingRejected, .info, "\(link.peer.address): peer rejected signaling command \(command.identifier) (reason \(reason.hex))")
            if parameterRequestAnswered(link: link, identifier: command.identifier, accepted: false) { return }
            _ = handleCreditBasedSignaling(link: link, command)
        case .connectionParameterUpdateResponse(let result):
            _ = parameterRequestAnswered(link: link, identifier: command.identifier, accepted: result == 0)
        default:
            if handleCreditBasedSignaling(link: link, command) { return }
            // Anything else is not understood (Vol 3, Part A, 4.1).
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: command.identifier, body: .commandReject(reason: 0x0000, data: [])))
        }
    }

    func sendSignaling(link: Link, _ command: L2CAPSignalingCommand) {
        enqueue(link: link, channelID: L2CAPChannelID.leSignaling, payload: command.bytes)
    }

    /// SMP PDUs go to the link's Security Manager channel once one is registered
    /// (`Connection.securityManagerChannel()`, module SMP). Without one, every Pairing Request
    /// and Security Request is answered with Pairing Failed, Pairing Not Supported (0x05)
    /// (Vol 3, Part H, 3.5.5).
    func handleSecurityManager(link: Link, payload: ArraySlice<UInt8>) {
        if let channel = link.channels[L2CAPChannelID.securityManager] {
            channel.deliver(payload)
            return
        }
        guard let code = payload.first else { return }
        switch code {
        case 0x01, 0x0B: // Pairing Request, Security Request
            logLimited(.pairingRefused, .info, "\(link.peer.address): peer wants to pair; answering Pairing Not Supported")
            enqueue(link: link, channelID: L2CAPChannelID.securityManager, payload: [0x05, 0x05])
        default:
            logger.log(.debug, "\(link.peer.address): ignoring SMP code \(code.hex)")
        }
    }
}

/// The largest inbound PDU each kind of channel accepts, which bounds reassembly.
enum L2CAPInboundLimits {
    /// ATT until a bearer sets its ATT_MTU (`FixedChannel.limitInboundSDUs`): the largest
    /// ATT_MTU the stack's bearer offers by default (Client Rx MTU 517).
    static let attDefault = 517
    /// MTUsig on LE-U: 23 octets (Vol 3, Part A, 4).
    static let signaling = 23
    /// SMP: the largest SMP PDU, Pairing Public Key (1 + 64 octets, Vol 3, Part H, 3.5.6).
    static let securityManager = 65
    /// Other fixed channels registered on a link.
    static let otherFixed = 1024
}

extension HCIHost {
    /// The largest information payload link `link` accepts on `channelID`: a PDU that
    /// announces more is dropped unbuffered.
    static func inboundLimit(link: Link, channelID: UInt16) -> Int {
        switch channelID {
        case L2CAPChannelID.att: return link.attMaximumPDU
        case L2CAPChannelID.leSignaling: return L2CAPInboundLimits.signaling
        case L2CAPChannelID.securityManager: return L2CAPInboundLimits.securityManager
        default:
            // A K-frame carries at most the MPS announced to the peer (Vol 3, Part A, 3.4.3).
            if let channel = link.creditBased.channels[channelID] { return channel.assumeIsolated { $0.mps } }
            return link.channels[channelID] != nil ? L2CAPInboundLimits.otherFixed : 0
        }
    }

    /// Sets the largest PDU link `handle` accepts on the ATT channel, its bearer's ATT_MTU
    /// (`FixedChannel.limitInboundSDUs`, the one way it is set): longer PDUs are dropped
    /// unbuffered and reported to the channel.
    func setMaximumInboundPDULength(handle: UInt16, channelID: UInt16, _ length: Int) {
        guard channelID == L2CAPChannelID.att, let link = links[handle] else { return }
        link.attMaximumPDU = min(max(length, 23), 65_535)
    }

    /// A PDU longer than its channel accepts was dropped. On the signaling channel the peer
    /// gets Command Reject, Signaling MTU exceeded (0x0001), with our MTUsig (Vol 3, Part A,
    /// 4.1) when the first fragment carried the command's identifier; the ATT channel tells
    /// its bearer, which judges the PDU by its opcode (a response fails the request in flight
    /// at once); a credit-based channel is closed, as for any K-frame beyond the MPS (Vol 3,
    /// Part A, 3.4.3).
    func oversizedPDURefused(link: Link, channelID: UInt16, length: Int, head: ArraySlice<UInt8>) {
        switch channelID {
        case L2CAPChannelID.att:
            link.att?.refusedPDU(head: head, size: length)
        case L2CAPChannelID.leSignaling:
            guard head.count >= 2 else { return }
            let mtu = UInt16(L2CAPInboundLimits.signaling)
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: head[head.startIndex + 1], body: .commandReject(reason: 0x0001, data: [UInt8(mtu & 0xFF), UInt8(mtu >> 8)])))
        default:
            if let channel = link.creditBased.channels[channelID] {
                channel.assumeIsolated { $0.protocolViolation(.exceedsMPS(size: length, mps: $0.mps)) }
            }
        }
    }

    // MARK: - Links of another host (hci-raw)

    /// Records that link `handle` belongs to another host on the same adapter (the kernel's,
    /// with `hci-raw`): its data is ignored and nothing is ever sent on it (no signaling
    /// answer, no Pairing Failed), until its Disconnection Complete.
    ///
    ///     await host.addForeignLink(handle: 0x0041)
    public func addForeignLink(handle: UInt16) {
        safeguards.foreignHandles.insert(handle & 0x0FFF)
    }

    /// Whether `handle` is a link of another host on this adapter.
    public func isForeignLink(_ handle: UInt16) -> Bool { safeguards.foreignHandles.contains(handle & 0x0FFF) }
}
