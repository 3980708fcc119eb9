/// Routing of complete L2CAP PDUs to the fixed channels, and the host's own answers on the
/// LE signaling (0x0005) and Security Manager (0x0006) channels (Core Spec Vol 3, Parts A and H).
extension HCIHost {
    func routeL2CAP(link: Link, channelID: UInt16, payload: ArraySlice<UInt8>) {
        if channelID == L2CAPChannelID.att, let att = link.att {
            att.deliver(payload)
            return
        }
        switch channelID {
        case L2CAPChannelID.leSignaling:
            handleSignaling(link: link, payload: Array(payload))
        case L2CAPChannelID.securityManager:
            handleSecurityManager(link: link, payload: Array(payload))
        default:
            if let channel = link.channels[channelID] ?? (channelID == L2CAPChannelID.att ? fixedChannel(handle: link.handle, channelID: channelID) : nil) {
                channel.deliver(payload)
            } else {
                logger.log(.info, "\(link.peer.address): dropping \(payload.count) bytes on unsupported L2CAP channel \(channelID.hex)")
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
            logger.log(.warning, "\(link.peer.address): malformed LE signaling command [\(payload.hexString())]: \(error)")
            let id = payload.count > 1 ? payload[1] : 0
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: id, body: .commandReject(reason: 0x0000, data: [])))
            return
        }
        switch command.body {
        case .connectionParameterUpdateRequest(let range):
            let accept = range.isValid && (parameterUpdatePolicy?(link.handle, range) ?? true)
            logger.log(.info, "\(link.peer.address): peer asks for interval \(range.minimumInterval)-\(range.maximumInterval), latency \(range.peripheralLatency), timeout \(range.supervisionTimeout): \(accept ? "accepted" : "rejected")")
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: command.identifier, body: .connectionParameterUpdateResponse(result: accept ? 0 : 1)))
            if accept {
                let handle = link.handle
                Task { [weak self] in
                    guard let self else { return }
                    do {
                        try await self.send(HCICommand.leConnectionUpdate(handle: handle, range.hciParameters))
                    } catch {
                        await self.logger.log(.warning, "LE Connection Update for handle \(handle.hex) failed: \(error)")
                    }
                }
            }
        case .commandReject(let reason, _):
            logger.log(.info, "\(link.peer.address): peer rejected signaling command \(command.identifier) (reason \(reason.hex))")
        case .connectionParameterUpdateResponse, .disconnectionResponse:
            break
        case .disconnectionRequest, .other:
            // No dynamic channels are open: anything else is not understood (Vol 3, Part A, 4.1).
            sendSignaling(link: link, L2CAPSignalingCommand(identifier: command.identifier, body: .commandReject(reason: 0x0000, data: [])))
        }
    }

    func sendSignaling(link: Link, _ command: L2CAPSignalingCommand) {
        enqueue(link: link, channelID: L2CAPChannelID.leSignaling, payload: command.bytes)
    }

    /// Until pairing is implemented, every Pairing Request and Security Request is answered with
    /// Pairing Failed, reason Pairing Not Supported (0x05) (Vol 3, Part H, 3.5.5).
    func handleSecurityManager(link: Link, payload: [UInt8]) {
        guard let code = payload.first else { return }
        switch code {
        case 0x01, 0x0B: // Pairing Request, Security Request
            logger.log(.info, "\(link.peer.address): peer wants to pair; answering Pairing Not Supported")
            enqueue(link: link, channelID: L2CAPChannelID.securityManager, payload: [0x05, 0x05])
        default:
            logger.log(.debug, "\(link.peer.address): ignoring SMP code \(code.hex)")
        }
    }
}
