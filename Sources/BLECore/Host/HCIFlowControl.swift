/// The credits between the host and its controller, as one value: HCI command flow control
/// (Num_HCI_Command_Packets, Core Spec Vol 4, Part E, 4.4) and LE ACL data flow control
/// (Total_Num_LE_ACL_Data_Packets from LE Read Buffer Size, Number Of Completed Packets per
/// Connection_Handle; 4.1, 4.3 and 7.7.19), and the host's side of each link's end (its queued
/// PDUs fail, its channels end, its buffers come back). It does no I/O: `HCIHost` feeds it what
/// happened and carries out the actions it returns (send queued commands or fragments, end a
/// link's traffic, log a controller that miscounts).
///
///     var flow = HCIFlowControl()
///     _ = flow.handle(.bufferSizeRead(packetLength: 251, packetCount: 8))
///     _ = flow.handle(.linkOpened(handle: 0x0040))
///     if flow.maySendACL(on: 0x0040) { _ = flow.handle(.aclSent(handle: 0x0040)) }
package struct HCIFlowControl: Hashable, Sendable {
    /// Num_HCI_Command_Packets: commands the controller accepts now. One at power-on and after
    /// a reset, until the first Command Complete or Command Status says otherwise (4.4).
    package private(set) var commandCredits: Int
    /// LE_ACL_Data_Packet_Length: the largest ACL payload the controller takes.
    package private(set) var aclPacketLength: Int
    /// Total_Num_LE_ACL_Data_Packets: the controller's ACL buffers.
    package private(set) var aclPacketCount: Int
    /// Controller buffers free now.
    package private(set) var aclCredits: Int
    /// Packets handed to the controller and not completed yet, for every open link.
    package private(set) var inFlight: [UInt16: Int]

    package init(commandCredits: Int = 1, aclPacketLength: Int = 27, aclPacketCount: Int = 0, aclCredits: Int = 0,
                 inFlight: [UInt16: Int] = [:]) {
        self.commandCredits = commandCredits
        self.aclPacketLength = aclPacketLength
        self.aclPacketCount = aclPacketCount
        self.aclCredits = aclCredits
        self.inFlight = inFlight
    }

    /// What happened between the host and the controller.
    package enum Event: Hashable, Sendable {
        /// A command went to the controller: it used a credit.
        case commandSent
        /// Num_HCI_Command_Packets of a Command Complete or Command Status: the credits now
        /// (the count replaces the previous one, it is not added to it).
        case commandCreditsReported(UInt8)
        /// A sent command got no completion within its timeout: the credit it held will never
        /// come back, so one is assumed free.
        case sentCommandTimedOut
        /// A command waited for a credit past its timeout; with no command in flight no
        /// completion will ever report one, so one is assumed free.
        case creditWaitExpired(commandsInFlight: Int)
        /// HCI_Reset is about to go out and the host failed the commands pending: the
        /// controller drops them, so the reset has at least one credit.
        case pendingCommandsDroppedForReset
        /// The transport was lost, closed or started again: back to the one credit of power-on.
        case commandsReset
        /// LE Read Buffer Size (or Read Buffer Size when LE shares the BR/EDR buffers):
        /// every buffer is free.
        case bufferSizeRead(packetLength: Int, packetCount: Int)
        /// LE Connection Complete: a link that may send. A link on the same handle whose
        /// Disconnection Complete never came ends first, as with `linkClosed`.
        case linkOpened(handle: UInt16)
        /// An ACL packet of `handle` went to the controller: it fills one buffer.
        case aclSent(handle: UInt16)
        /// One entry of Number Of Completed Packets.
        case completedPackets(handle: UInt16, count: Int)
        /// Disconnection Complete with Status 0x00 (7.7.5), or the link ended with the
        /// transport: its queued PDUs fail, its channels end, and its packets in the controller
        /// are flushed, their buffers free (4.3).
        case linkClosed(handle: UInt16)
        /// Hardware Error or HCI_Reset: the controller lost every link (each ends as with
        /// `linkClosed`), all buffers are free.
        case controllerCleared
    }

    /// What the host does next.
    package enum Action: Hashable, Sendable {
        /// Credits are free: send queued commands.
        case sendCommands
        /// Buffers are free for this link: put it back in the ACL round-robin.
        case resumeLink(handle: UInt16)
        /// Every link may send again (the spare buffer came back, or a link's share grew).
        case resumeAllLinks
        /// The controller reported more completed packets for a link than the host had sent
        /// it; only the packets in flight were credited (log it: the controller miscounts).
        case excessCompletedPackets(handle: UInt16, reported: Int, inFlight: Int)
        /// The link ended: fail the PDUs it queued and take it out of the ACL round-robin.
        case failQueuedPDUs(handle: UInt16)
        /// The link ended: end its fixed and credit-based channels and its signaling requests.
        case endChannels(handle: UInt16)
        /// The link ended with `count` packets in the controller: flushed with it, their
        /// buffers are free again and already counted in `aclCredits` (log it).
        case creditsReturned(handle: UInt16, count: Int)
    }

    /// The most packets one link may have in the controller at once: an equal share of the buffers.
    package var linkShare: Int { max(1, aclPacketCount / max(1, inFlight.count)) }

    /// True when a fragment of `handle` may go now: a buffer is free, the link is below its
    /// share, and a link with packets in flight never takes the last free buffer (that one
    /// stays for a link with none, so a new link sends while every other peer is silent).
    package func maySendACL(on handle: UInt16) -> Bool {
        guard aclCredits > 0, let held = inFlight[handle] else { return false }
        return held < linkShare && (held == 0 || aclCredits > 1)
    }

    /// Takes one event; returns what the host must do, in order.
    package mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .commandSent:
            commandCredits = max(0, commandCredits - 1)
            return []
        case .commandCreditsReported(let credits):
            commandCredits = Int(credits)
            return credits > 0 ? [.sendCommands] : []
        case .sentCommandTimedOut, .pendingCommandsDroppedForReset:
            commandCredits = max(commandCredits, 1)
            return [.sendCommands]
        case .creditWaitExpired(let inFlight):
            guard inFlight == 0 else { return [] }
            commandCredits = max(commandCredits, 1)
            return [.sendCommands]
        case .commandsReset:
            commandCredits = 1
            return []
        case .bufferSizeRead(let length, let count):
            aclPacketLength = max(1, length)
            aclPacketCount = max(1, count)
            aclCredits = aclPacketCount - inFlight.values.reduce(0, +)
            return []
        case .linkOpened(let link):
            // A handle reused without its Disconnection Complete: the old link's buffers are free.
            let actions = inFlight[link] != nil ? handle(.linkClosed(handle: link)) : []
            inFlight[link] = 0
            return actions
        case .aclSent(let handle):
            aclCredits -= 1
            inFlight[handle, default: 0] += 1
            return []
        case .completedPackets(let handle, let count):
            return completed(handle: handle, count: count)
        case .linkClosed(let handle):
            guard let held = inFlight.removeValue(forKey: handle) else { return [] }
            aclCredits += held
            // Fewer links: each remaining one's share grew.
            return ended(handle, held: held) + (inFlight.isEmpty ? [] : [.resumeAllLinks])
        case .controllerCleared:
            let actions = inFlight.sorted { $0.key < $1.key }.flatMap { ended($0.key, held: $0.value) }
            inFlight.removeAll()
            aclCredits = aclPacketCount
            return actions
        }
    }

    /// The link's end, in order: its queue fails before its channels end (a channel's close
    /// handler finds nothing of its own still queued), then its buffers are reported back.
    private func ended(_ handle: UInt16, held: Int) -> [Action] {
        [.failQueuedPDUs(handle: handle), .endChannels(handle: handle)] + (held > 0 ? [.creditsReturned(handle: handle, count: held)] : [])
    }

    /// Number Of Completed Packets for one handle. The count is of packets completed since
    /// the last report (7.7.19), so it can never exceed those in flight: a larger one is
    /// clamped, as crediting it would let the host overrun buffers the controller does not
    /// have (4.1). A handle with no open link is ignored: its buffers came back with its
    /// Disconnection Complete.
    private mutating func completed(handle: UInt16, count: Int) -> [Action] {
        guard let held = inFlight[handle] else { return [] }
        let n = min(max(0, count), held)
        let spareWasHeld = aclCredits <= 1
        inFlight[handle] = held - n
        aclCredits += n
        var actions: [Action] = []
        if count > held { actions.append(.excessCompletedPackets(handle: handle, reported: count, inFlight: held)) }
        actions.append(.resumeLink(handle: handle))
        // Links that left the turn to keep the last buffer free may take more now.
        if spareWasHeld, aclCredits > 1 { actions.append(.resumeAllLinks) }
        return actions
    }
}
