import BLECore
import BLEWire

/// The gateway never stops silently when its adapter goes away (a USB dongle unplugged, the
/// user channel lost, a controller Hardware Error): it publishes the loss on
/// `ble/GWID/adapter` (retained) and in the metrics, logs it, reopens the adapter with
/// `Central.reopen` and its backoff, then scans again and re-establishes the configured links.
extension Gateway {
    /// The adapter as the gateway last saw it.
    struct AdapterStatus {
        /// `up`, `lost` (being reopened) or `failed` (the reopen gave up).
        var state = "up"
        /// Reopens that succeeded since the gateway started.
        var reopens = 0
    }

    /// Waits for the adapter to be lost, reopens it and resumes, until cancelled or until the
    /// application closes the central.
    func adapterLoop() async {
        await publishAdapterState(message: nil)
        while !Task.isCancelled {
            guard let reason = await nextLoss() else { return }
            adapter.state = "lost"
            central.options.logger.log(.warning, "gateway \(topics.gatewayID): adapter lost (\(reason)); reopening")
            await publishAdapterState(message: reason)
            do {
                try await central.reopen(adapterReopen)
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                adapter.state = "failed"
                central.options.logger.log(.error, "gateway \(topics.gatewayID): adapter not reopened: \(error)")
                await publishAdapterState(message: "\(error)")
                return
            }
            adapter.state = "up"
            adapter.reopens += 1
            central.options.logger.log(.notice, "gateway \(topics.gatewayID): adapter reopened (\(adapter.reopens) so far); scanning and links resume")
            await publishAdapterState(message: nil)
            resumeAfterReopen()
        }
    }

    /// The reason of the next loss of the powered-on adapter: the transport lost, or a
    /// Hardware Error the central does not recover from by itself. Nil when the central was
    /// closed or the task cancelled.
    private func nextLoss() async -> String? {
        // `stateEvents` replays the current state first. Resetting counts only after powered
        // on: before, it is the first power-on.
        var wasOn = false
        for await state in await central.stateEvents() {
            switch state {
            case .transportLost:
                return await central.snapshot.reason ?? "transport lost"
            case .resetting where wasOn && !central.options.resetAfterHardwareError:
                return await central.snapshot.reason ?? "the controller is resetting"
            case .poweredOn:
                wasOn = true
            case .poweredOff:
                return nil
            default:
                continue
            }
        }
        return nil
    }

    /// Scans and the configured links ended with the adapter: start them again now rather
    /// than after each link's backoff.
    private func resumeAfterReopen() {
        if scanTask != nil {
            scanTask?.cancel()
            scanTask = nil
            applyScan(true)
        }
        for (address, task) in deviceTasks {
            task.cancel()
            deviceTasks[address] = nil
        }
        for device in config.devices where holds(device) { startDevice(device) }
    }

    /// Retained `{"state":"up"|"lost"|"failed","reopens":N}` (with `message` when there is
    /// one) on `ble/GWID/adapter`.
    func publishAdapterState(message: String?) async {
        var pairs: [(String, JSONValue)] = [("state", .string(adapter.state)), ("reopens", .int(adapter.reopens))]
        if let message { pairs.append(("message", .string(message))) }
        await publisher.enqueue(MQTTMessage(topic: topics.adapter, payload: JSONValue.object(pairs).bytes, qos: .atLeastOnce, retain: true))
    }
}

extension GatewayTopics {
    /// `ble/GWID/adapter`: the adapter's state and reopen count (retained).
    public var adapter: String { "\(base)/adapter" }
}
