import GATTClient
import BLEWire
import ATT

extension GATTServer {
    /// Sends a Handle Value Notification of `value` (cut to ATT_MTU - 3) to every link that
    /// enabled notifications of `characteristic`, and stores the value; returns how many
    /// links it was sent or queued to. A link whose send queue is full
    /// (`ATTServerLinkFlowControl`) gets it queued in the server while that queue has room
    /// (`notificationQueueLimit`); beyond, it is dropped and counted, and a return below the
    /// subscriber count tells the app to slow down (`notify(characteristic:value:waitingUpTo:)`
    /// waits for room instead).
    ///
    ///     await server.notify(characteristic: heartRateMeasurement, value: [0x00, 72])
    @discardableResult
    public func notify(characteristic: BluetoothUUID, value: [UInt8]) async -> Int {
        await onQueue { self.notifyOnQueue(characteristic: characteristic, value: value) }
    }

    package func notifyOnQueue(characteristic: BluetoothUUID, value: [UInt8]) -> Int {
        guard let valueHandle = valueHandleOnQueue(characteristic), let cccd = cccdHandle(of: characteristic) else { return 0 }
        if let i = table.index(of: valueHandle) { table.attributes[i].value = value }
        var sent = 0
        for (id, state) in links where !state.ended && (state.cccd[cccd] ?? 0) & 0x0001 != 0 {
            let part = Array(value.prefix(Int(state.mtu) - 3))
            if offer(ATTPDU.handleValueNotification(handle: valueHandle, value: part).bytes, to: state, id: id) { sent += 1 } else { countDrop(state) }
        }
        return sent
    }

    /// Notifies several characteristics at once: a Multiple Handle Value Notification (Vol 3,
    /// Part F, 3.4.7.4) to each link that enabled Multiple Handle Value Notifications in
    /// Client Supported Features (bit 2) and fits them in its ATT_MTU, separate notifications
    /// to the others; each link gets only the values it subscribed to. Returns how many links
    /// got something; a link whose queue is full drops what does not fit, as `notify` does.
    ///
    ///     await server.notify([(temperature, [0x10, 0x09]), (humidity, [0x88, 0x13])])
    @discardableResult
    public func notify(_ values: [(characteristic: BluetoothUUID, value: [UInt8])]) async -> Int {
        await onQueue {
            var entries: [(handle: UInt16, cccd: UInt16, value: [UInt8])] = []
            for (uuid, value) in values {
                guard let h = self.valueHandleOnQueue(uuid), let cccd = self.cccdHandle(forValue: h) else { continue }
                if let i = self.table.index(of: h) { self.table.attributes[i].value = value }
                entries.append((h, cccd, value))
            }
            var reached = 0
            for (id, state) in self.links where !state.ended {
                let mine = entries.filter { (state.cccd[$0.cccd] ?? 0) & 0x0001 != 0 }
                guard !mine.isEmpty else { continue }
                let size = 1 + mine.reduce(0) { $0 + 4 + $1.value.count }
                let pdus = mine.count > 1 && state.clientFeatures & 0x04 != 0 && size <= Int(state.mtu)
                    ? [ATTPDU.multipleHandleValueNotification(mine.map { ATTHandleValue(handle: $0.handle, value: $0.value) }).bytes]
                    : mine.map { ATTPDU.handleValueNotification(handle: $0.handle, value: Array($0.value.prefix(Int(state.mtu) - 3))).bytes }
                var any = false
                for pdu in pdus {
                    if self.offer(pdu, to: state, id: id) { any = true } else { self.countDrop(state) }
                }
                if any { reached += 1 }
            }
            return reached
        }
    }

    /// Sends a Handle Value Indication to every link that enabled indications of
    /// `characteristic` and waits for each confirmation; returns how many were confirmed
    /// (a link that drops first, or leaves it unconfirmed for `indicationTimeout`, does not
    /// count). A cancelled task stops waiting at once and sends no further indication; a
    /// confirmation that comes later is taken quietly.
    ///
    ///     let confirmed = await server.indicate(characteristic: counter, value: [1, 0, 0, 0])
    @discardableResult
    public func indicate(characteristic: BluetoothUUID, value: [UInt8]) async -> Int {
        guard let valueHandle = await valueHandle(of: characteristic) else { return 0 }
        return await indicate(handle: valueHandle, value: value)
    }

    /// Indicates Service Changed (0x2A05) with `range` (Vol 3, Part G, 7.1) to every link
    /// that enabled it; returns how many confirmed (each of those is change-aware again).
    ///
    ///     await server.replaceDatabase(newDatabase)
    ///     await server.sendServiceChanged(range: ATTHandleRange(start: 1, end: 0xFFFF))
    @discardableResult
    public func sendServiceChanged(range: ATTHandleRange) async -> Int {
        guard let handle = await onQueue({ self.table.serviceChangedHandle }) else { return 0 }
        var value: [UInt8] = []
        value.appendLE(range.start); value.appendLE(range.end)
        return await indicate(handle: handle, value: value)
    }

    package func indicate(handle valueHandle: UInt16, value: [UInt8]) async -> Int {
        let targets: [ObjectIdentifier] = await onQueue {
            guard let cccd = self.cccdHandle(forValue: valueHandle) else { return [] }
            return self.links.filter { !$0.value.ended && (($0.value.cccd[cccd] ?? 0) & 0x0002) != 0 }.map(\.key)
        }
        var confirmed = 0
        for id in targets where !Task.isCancelled {
            let waiter = await onQueue { () -> UInt64 in
                self.nextConfirmationWaiter += 1
                self.unaddedConfirmationWaiters.insert(self.nextConfirmationWaiter)
                return self.nextConfirmationWaiter
            }
            let ok = await withTaskCancellationHandler {
                await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                    queue.async {
                        // Gone from the set: the task was cancelled before this ran.
                        guard self.unaddedConfirmationWaiters.remove(waiter) != nil, let state = self.links[id], !state.ended else {
                            c.resume(returning: false)
                            return
                        }
                        self.links[id]?.confirmationWaiters.append((waiter, c))
                        if valueHandle == self.table.serviceChangedHandle { self.links[id]?.serviceChangedSent = true }
                        if state.indicationTimer == nil { self.startIndicationTimer(link: id) }
                        let part = Array(value.prefix(Int(state.mtu) - 3))
                        state.link.sendToCentral(ATTPDU.handleValueIndication(handle: valueHandle, value: part).bytes)
                    }
                }
            } onCancel: {
                queue.async { self.stopWaiting(waiter, link: id) }
            }
            if ok { confirmed += 1 }
        }
        return confirmed
    }

    /// A Handle Value Confirmation: the oldest indication on the link is confirmed.
    func confirmationReceived(link id: ObjectIdentifier) {
        guard links[id]?.confirmationWaiters.isEmpty == false else { return }
        links[id]?.indicationTimer?.cancel()
        links[id]?.indicationTimer = nil
        if links[id]?.serviceChangedSent == true {
            links[id]?.serviceChangedSent = false
            links[id]?.changeAware = true
            rememberBondState(id)
        }
        links[id]?.confirmationWaiters.removeFirst().continuation?.resume(returning: true)
        if links[id]?.confirmationWaiters.isEmpty == false { startIndicationTimer(link: id) }
    }

    /// The ATT transaction timer of the oldest unconfirmed indication (Part F, 3.3.3): when it
    /// fires the bearer ends: no further PDU is sent or handled on it, its waits fail, and a
    /// link that can be closed is.
    private func startIndicationTimer(link id: ObjectIdentifier) {
        links[id]?.indicationTimer = scheduler.schedule(after: indicationTimeout) { [weak self] in
            guard let self, let state = self.links[id] else { return }
            let waiters = state.confirmationWaiters
            state.ended = true
            state.indicationTimer = nil
            state.confirmationWaiters = []
            for w in waiters { w.continuation?.resume(returning: false) }
            (state.link as? any ATTServerLinkClosing)?.closeBearer()
            self.hooks?.changed(self)
        }
    }

    /// The task waiting for confirmation `waiter` was cancelled. An indication not sent yet
    /// never is; one sent stays in line without its caller, so the confirmation that answers
    /// it is still matched to it.
    private func stopWaiting(_ waiter: UInt64, link id: ObjectIdentifier) {
        if unaddedConfirmationWaiters.remove(waiter) != nil { return }
        guard let i = links[id]?.confirmationWaiters.firstIndex(where: { $0.id == waiter }),
              let entry = links[id]?.confirmationWaiters[i] else { return }
        links[id]?.confirmationWaiters[i] = (entry.id, nil)
        entry.continuation?.resume(returning: false)
    }
}
