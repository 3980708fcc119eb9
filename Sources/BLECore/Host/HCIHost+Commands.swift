import BLEWire

/// Command flow control (Core Spec Vol 4, Part E, 4.4): commands wait for a credit
/// (Num_HCI_Command_Packets), go out one per credit, and are matched with their Command
/// Complete or Command Status; a timeout frees the credit a lost completion would have
/// returned; cancelled callers leave at once (`.cancelled` before sending,
/// `.cancelledAfterSending` after). A command still queued when its timeout passes fails with
/// `.noCommandCredit`; when nothing is in flight the host then assumes one credit, so a
/// controller that set the credit to zero with nothing outstanding cannot wedge the queue.
/// When the timeout passes while sent commands hold the credits, the wait restarts once, as
/// soon as one of them ends (each does by its own timeout at the latest), so a command queued
/// behind one that is never answered still goes out; the wait stays bounded by twice its
/// timeout plus the holder's.
/// A completion that echoes a Connection_Handle is matched by handle too, so a late answer
/// for a command that timed out never completes another link's command. For any other
/// opcode, after a timeout the next command with that opcode waits (others go on) until the
/// late answer arrives and is dropped, or `lateAnswerGrace` passes, so a late Command
/// Complete never completes the next command with the same opcode.
extension HCIHost {
    struct PendingCommand {
        let packet: HCICommandPacket
        let timeout: Duration
        /// The caller, in `commandWaiters`. A caller cancelled after sending is gone from
        /// there, but the command is still tracked so that its completion is taken (and its
        /// timer still frees a lost credit).
        let waiter: Waiters<[UInt8], HCIError>.ID
        /// The deadline of the phase the command is in: waiting for a credit, or for its completion.
        var timer: (any ScheduledTimer)?
        /// Where the wait for a credit is (see `queuedCommandExpired`).
        var creditWait = CreditWait.first
    }

    enum CreditWait {
        /// Within the command's timeout.
        case first
        /// The timeout passed while sent commands held the credits: no deadline until one of them ends.
        case awaitingHolder
        /// Restarted when a holder ended; the next expiry fails the command.
        case restarted
    }

    /// Sends a command and waits for its Command Complete (returning the return parameters,
    /// status byte first) or Command Status (returning []). A non-zero status throws
    /// `HCIError.commandFailed` naming the opcode and the error code. Cancelling the calling
    /// task ends the wait at once: `.cancelled` while the command still waits for a credit
    /// (it is never sent), `.cancelledAfterSending` once it went out (the controller carries
    /// it out and the host still takes its completion).
    ///
    ///     let rp = try await host.send(HCICommand.readBDADDR())
    @discardableResult
    public func send(_ command: HCICommandPacket, timeout: Duration? = nil) async throws(HCIError) -> [UInt8] {
        if let lostReason { throw .transportLost(lostReason) }
        let timeout = timeout ?? defaultCommandTimeout
        if command.opcode == Self.resetOpcode { failCommandsBeforeReset() }
        let result = await commandWaiters.wait(cancelled: { [weak self] id in
            .failure(self?.assumeIsolated { $0.commandCancelled(id, opcode: command.opcode) } ?? .cancelled(opcode: command.opcode))
        }) { id in
            waitingCommands.append(PendingCommand(packet: command, timeout: timeout, waiter: id))
            pumpCommands()
            if let index = waitingCommands.firstIndex(where: { $0.waiter == id }) {
                armCreditDeadline(index)
            }
        }
        return try result.get()
    }

    /// Starts the timeout of `waitingCommands[index]`'s wait for a credit.
    func armCreditDeadline(_ index: Int) {
        let id = waitingCommands[index].waiter
        waitingCommands[index].timer = scheduler.schedule(after: waitingCommands[index].timeout) { [weak self] in
            self?.assumeIsolated { $0.queuedCommandExpired(id) }
        }
    }

    /// A sent command ended (completed or timed out), so its credit is back or assumed:
    /// commands whose timeout passed while it was held get their own timeout again.
    func restartCreditDeadlines() {
        for index in waitingCommands.indices where waitingCommands[index].creditWait == .awaitingHolder {
            waitingCommands[index].creditWait = .restarted
            armCreditDeadline(index)
        }
    }

    /// The caller of command `id` was cancelled: a command not sent yet leaves the queue
    /// (`.cancelled`); a sent one stays tracked without its caller, so its completion still
    /// finds it (`.cancelledAfterSending`).
    func commandCancelled(_ id: Waiters<[UInt8], HCIError>.ID, opcode: HCIOpcode) -> HCIError {
        if sentCommands.contains(where: { $0.waiter == id }) { return .cancelledAfterSending(opcode: opcode) }
        if let index = waitingCommands.firstIndex(where: { $0.waiter == id }) {
            waitingCommands.remove(at: index).timer?.cancel()
        }
        return .cancelled(opcode: opcode)
    }

    /// How long, after a command timed out, the host waits for its late answer before it sends
    /// the next command with the same opcode anyway.
    static let lateAnswerGrace: Duration = .seconds(1)

    func pumpCommands() {
        while flow.commandCredits > 0, lostReason == nil,
              let next = waitingCommands.firstIndex(where: { lateAnswerHolds[$0.packet.opcode] == nil }) {
            var command = waitingCommands.remove(at: next)
            do {
                try transport.send(.command(command.packet))
            } catch {
                commandWaiters.resume(command.waiter, with: .failure(.transportLost("\(error)")))
                continue
            }
            _ = flow.handle(.commandSent)
            if command.packet.opcode == Self.resetOpcode { unansweredResets += 1 }
            let id = command.waiter
            command.timer?.cancel()
            command.timer = scheduler.schedule(after: command.timeout) { [weak self] in
                self?.assumeIsolated { $0.commandTimedOut(id) }
            }
            sentCommands.append(command)
        }
    }

    func completeCommand(_ opcode: HCIOpcode, _ result: Result<[UInt8], HCIError>) {
        if opcode == Self.resetOpcode {
            if unansweredResets > 0 {
                unansweredResets -= 1
                ownResetCompleted = true
            } else if ownResetCompleted {
                return controllerResetElsewhere()
            }
        }
        let echoed = Self.echoedHandle(opcode, result)
        if let hold = lateAnswerHolds.removeValue(forKey: opcode) {
            hold.cancel()
            logger.log(.debug, "late completion for \(opcode) after its timeout: dropped")
            pumpCommands()
            return
        }
        guard let index = sentCommands.firstIndex(where: { $0.packet.opcode == opcode && (echoed == nil || Self.handle(of: $0.packet) == echoed) }) else {
            logger.log(.debug, "completion for \(opcode) that no caller is waiting for (late, after a timeout?)")
            return
        }
        let command = sentCommands.remove(at: index)
        command.timer?.cancel()
        restartCreditDeadlines()
        if case .success(let rp) = result, let status = rp.first, status != 0 {
            commandWaiters.resume(command.waiter, with: .failure(.commandFailed(opcode: opcode, status: HCIStatus(rawValue: status))))
        } else {
            commandWaiters.resume(command.waiter, with: result)
        }
    }

    /// A Command Complete for an HCI_Reset this host never sent: another program on the same
    /// controller (a second process on the UART, one left running) reset it, and with it every
    /// link, scan and setting of this host (Vol 4, Part E, 7.3.2), with nothing else to say so.
    /// The transport is reported lost and closed, so a central's reopen policy starts afresh
    /// and an application sees why.
    func controllerResetElsewhere() {
        transportLost("the controller completed an HCI_Reset (0x0C03) that this host did not send: another program using \(transport.name) reset it, ending this host's links and scans; make sure only one program uses the controller")
        transport.close()
    }

    func commandTimedOut(_ id: Waiters<[UInt8], HCIError>.ID) {
        guard let index = sentCommands.firstIndex(where: { $0.waiter == id }) else { return }
        let command = sentCommands.remove(at: index)
        let ms = Int(command.timeout.nanoseconds / 1_000_000)
        // The caller gets the error and decides how much it matters (an optional command
        // such as LE Set PHY is not worth a warning), so the host only traces it.
        logger.log(.debug, "\(command.packet.opcode) timed out after \(ms) ms", metadata: ["opcode": command.packet.opcode.rawValue.hex])
        commandWaiters.resume(command.waiter, with: .failure(.commandTimeout(opcode: command.packet.opcode, milliseconds: ms)))
        let opcode = command.packet.opcode
        if !Self.handleEchoingOpcodes.contains(opcode.rawValue) {
            lateAnswerHolds[opcode]?.cancel()
            lateAnswerHolds[opcode] = scheduler.schedule(after: Self.lateAnswerGrace) { [weak self] in
                self?.assumeIsolated { host in
                    host.lateAnswerHolds[opcode] = nil
                    host.pumpCommands()
                }
            }
        }
        // The controller's credit for that command will never come back: assume one is free
        // again so a single unanswered command cannot wedge the host.
        apply(flow.handle(.sentCommandTimedOut))
        restartCreditDeadlines()
    }

    /// A reset or a lost transport: no late answer will come.
    func releaseLateAnswerHolds() {
        for hold in lateAnswerHolds.values { hold.cancel() }
        lateAnswerHolds.removeAll()
    }

    /// A command still waiting for a credit reached its timeout. While sent commands hold the
    /// credits (the first time only) it waits on until one of them ends; otherwise it fails,
    /// and with nothing in flight no completion will ever return a credit, so the host assumes one.
    func queuedCommandExpired(_ id: Waiters<[UInt8], HCIError>.ID) {
        guard let index = waitingCommands.firstIndex(where: { $0.waiter == id }) else { return }
        if waitingCommands[index].creditWait == .first, !sentCommands.isEmpty {
            waitingCommands[index].creditWait = .awaitingHolder
            waitingCommands[index].timer = nil
            return
        }
        let command = waitingCommands.remove(at: index)
        let ms = Int(command.timeout.nanoseconds / 1_000_000)
        logger.log(.warning, "\(command.packet.opcode) got no command credit within \(ms) ms", metadata: ["opcode": command.packet.opcode.rawValue.hex])
        commandWaiters.resume(id, with: .failure(.noCommandCredit(opcode: command.packet.opcode, milliseconds: ms)))
        apply(flow.handle(.creditWaitExpired(commandsInFlight: sentCommands.count)))
    }

    /// Commands whose parameters and return parameters (after the Status) both begin with a
    /// Connection_Handle (Vol 4, Part E): Read Transmit Power Level, Read RSSI, LE Read
    /// Channel Map, LE Long Term Key Request Reply and Negative Reply, LE Remote Connection
    /// Parameter Request Reply and Negative Reply, LE Set Data Length, LE Read PHY, Read
    /// Encryption Key Size.
    static let handleEchoingOpcodes: Set<UInt16> = [0x0C2D, 0x1405, 0x1408, 0x2015, 0x201A, 0x201B, 0x2020, 0x2021, 0x2022, 0x2030]

    /// The Connection_Handle a Command Complete echoes, for the commands that echo one.
    static func echoedHandle(_ opcode: HCIOpcode, _ result: Result<[UInt8], HCIError>) -> UInt16? {
        guard handleEchoingOpcodes.contains(opcode.rawValue), case .success(let rp) = result, rp.count >= 3 else { return nil }
        return (UInt16(rp[1]) | UInt16(rp[2]) << 8) & 0x0FFF
    }

    /// The Connection_Handle a command packet starts with.
    static func handle(of packet: HCICommandPacket) -> UInt16? {
        guard packet.parameters.count >= 2 else { return nil }
        let p = packet.parameters
        return (UInt16(p[p.startIndex]) | UInt16(p[p.startIndex + 1]) << 8) & 0x0FFF
    }

    /// HCI_Reset (Vol 4, Part E, 7.3.2).
    static let resetOpcode = HCIOpcode(rawValue: 0x0C03)

    /// HCI_Reset is about to be queued: the controller drops every command it has, and will
    /// answer none of them, so each pending caller fails now with `.controllerReset` naming
    /// its opcode, and the credits they held are free for the reset.
    func failCommandsBeforeReset() {
        releaseLateAnswerHolds()
        let all = sentCommands + waitingCommands
        guard !all.isEmpty else { return }
        logger.log(.debug, "resetting the controller: failing \(all.count) pending command(s): \(all.map { "\($0.packet.opcode)" }.joined(separator: ", "))")
        sentCommands.removeAll()
        waitingCommands.removeAll()
        for c in all {
            c.timer?.cancel()
            commandWaiters.resume(c.waiter, with: .failure(.controllerReset(opcode: c.packet.opcode)))
        }
        // Not `apply`: the reset itself is queued next and pumps.
        _ = flow.handle(.pendingCommandsDroppedForReset)
    }

    func failAllCommands(_ error: HCIError) {
        releaseLateAnswerHolds()
        let all = sentCommands + waitingCommands
        sentCommands.removeAll()
        waitingCommands.removeAll()
        for c in all {
            c.timer?.cancel()
            commandWaiters.resume(c.waiter, with: .failure(error))
        }
        _ = flow.handle(.commandsReset)
    }
}
