import BLECore
import BLEWire
import GATTServer

/// ACL data: buffer accounting and Number Of Completed Packets, reassembly, routing to the
/// peer's fixed channels, and fragmentation towards the host (Vol 4, Part E, 4.1 and 5.4.2;
/// Vol 3, Part A, 7.2).
extension VirtualController {
    /// Reports every withheld packet of `peer`'s link (of every link when nil) as completed.
    /// With `PacketCompletion.manual` this is how the host's ACL credits come back.
    public func completePackets(for peer: LEAddress? = nil) {
        onQueue {
            let selected = links.values.filter { peer == nil || $0.peer == peer }.sorted { $0.handle < $1.handle }
            let entries = selected.filter { $0.uncompleted > 0 }.map { link in
                defer { link.uncompleted = 0 }
                return HCIEvent.CompletedPackets(handle: link.handle, count: UInt16(link.uncompleted))
            }
            guard !entries.isEmpty else { return }
            hostACLInFlight -= entries.reduce(0) { $0 + Int($1.count) }
            send(.numberOfCompletedPackets(entries))
        }
    }

    /// Withholds Number Of Completed Packets for `peer`'s link whatever `packetCompletion` says,
    /// as a peer that stopped acknowledging does, while other links complete as usual; `false`
    /// reports what was withheld and completes as usual again.
    ///
    ///     try vc.holdCompletedPackets(of: slowCentral)   // its host queue fills, the others' do not
    public func holdCompletedPackets(of peer: LEAddress, _ hold: Bool = true) throws(VirtualControllerError) {
        try onQueue { () throws(VirtualControllerError) in
            guard let link = links.values.first(where: { $0.peer == peer }) else { throw .notConnected(peer) }
            link.holdsCompletions = hold
        }
        if !hold { completePackets(for: peer) }
    }

    /// Sends one L2CAP frame from `peer` to the host on `channelID`, fragmented to
    /// `options.controllerToHostFragmentSize`.
    ///
    ///     try vc.sendL2CAP(from: peer, channelID: L2CAPChannelID.securityManager, payload: pairingRequest)
    public func sendL2CAP(from peer: LEAddress, channelID: UInt16, payload: [UInt8]) throws(VirtualControllerError) {
        try onQueue { () throws(VirtualControllerError) in
            guard let link = links.values.first(where: { $0.peer == peer }) else { throw .notConnected(peer) }
            sendToHost(handle: link.handle, channelID: channelID, payload: payload)
        }
    }

    /// Sends an LE signaling command from `peer` (CID 0x0005).
    public func sendSignaling(from peer: LEAddress, _ command: L2CAPSignalingCommand) throws(VirtualControllerError) {
        try sendL2CAP(from: peer, channelID: L2CAPChannelID.leSignaling, payload: command.bytes)
    }

    /// The peer asks for new connection parameters with an L2CAP Connection Parameter Update
    /// Request (Vol 3, Part A, 4.20). The host's response shows in `signalingReceived`.
    ///
    ///     try vc.requestParameterUpdate(from: peer, ConnectionParameterRange(minimumInterval: 24, maximumInterval: 40, peripheralLatency: 0, supervisionTimeout: 400))
    public func requestParameterUpdate(from peer: LEAddress, _ range: ConnectionParameterRange, identifier: UInt8 = 1) throws(VirtualControllerError) {
        try sendSignaling(from: peer, L2CAPSignalingCommand(identifier: identifier, body: .connectionParameterUpdateRequest(range)))
    }

    // MARK: - Host to controller

    func receiveACL(_ packet: ACLDataPacket) {
        aclPackets.append(packet)
        defer { changed() }
        guard let link = links[packet.handle] else { return } // a packet for a gone link is flushed, never completed
        hostACLInFlight += 1
        if hostACLInFlight > Int(options.aclPacketCount) || packet.data.count > Int(options.aclPacketLength) {
            aclFlowViolations += 1
        }
        link.uncompleted += 1
        switch link.holdsCompletions ? .manual : options.packetCompletion {
        case .immediate:
            completeOne(link)
        case .after(let delay):
            if let timer = after(delay, { [handle = link.handle] vc in if let l = vc.links[handle] { vc.completeOne(l) } }) {
                link.timers.append(timer)
            }
        case .manual:
            break
        }
        switch link.reassembler.push(packet) {
        case .complete(let cid, let payload):
            let frame = L2CAPFrame(handle: link.handle, channelID: cid, payload: payload)
            framesReceived.append(frame)
            route(frame, link: link)
        case .incomplete, .dropped:
            break
        }
    }

    func completeOne(_ link: Link) {
        guard link.uncompleted > 0 else { return }
        link.uncompleted -= 1
        hostACLInFlight -= 1
        send(.numberOfCompletedPackets([.init(handle: link.handle, count: 1)]))
    }

    func route(_ frame: L2CAPFrame, link: Link) {
        guard frame.channelID == L2CAPChannelID.att else { return } // signaling and SMP are recorded for the test to read
        if link.dropATT {
            droppedATT += 1
            return
        }
        peripheral(link.peer)?.attServer?.receive(frame.payload, from: link.attLink)
    }

    // MARK: - Controller to host

    func sendToHost(handle: UInt16, channelID: UInt16, payload: [UInt8]) {
        guard links[handle] != nil else { return }
        framesSent.append(L2CAPFrame(handle: handle, channelID: channelID, payload: payload))
        var pdu: [UInt8] = []
        pdu.reserveCapacity(payload.count + 4)
        pdu.appendLE(UInt16(truncatingIfNeeded: payload.count))
        pdu.appendLE(channelID)
        pdu.append(contentsOf: payload)
        let size = max(1, options.controllerToHostFragmentSize)
        var offset = 0
        repeat {
            let end = min(offset + size, pdu.count)
            // Controller to host: the first fragment is flagged automatically flushable (0b10).
            send(.acl(ACLDataPacket(handle: handle, boundary: offset == 0 ? .firstFlushable : .continuing, data: Array(pdu[offset..<end]))))
            offset = end
        } while offset < pdu.count
    }
}

/// The link a simulated peripheral's ATT server answers on: ATT PDUs go to the host on CID
/// 0x0004 of the connection it was created for.
final class VirtualATTLink: ATTServerLink {
    weak let controller: VirtualController?
    let handle: UInt16
    let centralDescription: String

    init(controller: VirtualController, handle: UInt16) {
        self.controller = controller
        self.handle = handle
        self.centralDescription = "\(controller.address) (handle \(handle.hex))"
    }

    func sendToCentral(_ pdu: [UInt8]) {
        guard let controller else { return }
        let handle = self.handle
        if controller.isOnQueue {
            controller.sendToHost(handle: handle, channelID: L2CAPChannelID.att, payload: pdu)
        } else {
            controller.queue.async { [weak controller] in controller?.sendToHost(handle: handle, channelID: L2CAPChannelID.att, payload: pdu) }
        }
    }
}
