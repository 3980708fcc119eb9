import GATTClient
import BLETransport
import Dispatch
import BLEWire
import BLECore
import ATT

/// What became of one notification to its subscribers
/// (`GATTServer.notify(characteristic:value:waitingUpTo:)`).
public struct NotificationDelivery: Sendable, Hashable {
    /// Links it was sent or queued to.
    public var queued: Int
    /// Subscribed links that did not get it: their queue stayed full (or they went) until the timeout.
    public var dropped: Int

    public init(queued: Int = 0, dropped: Int = 0) {
        self.queued = queued
        self.dropped = dropped
    }
}

/// Notification counters of a `GATTServer` (`notificationStatistics()`).
public struct NotificationStatistics: Sendable, Hashable {
    /// One connected client's link.
    public struct Link: Sendable, Hashable {
        /// The link's `centralDescription`.
        public var peer: String
        /// Handed to the link since it connected.
        public var sent: Int
        /// Held by the server because the link's send queue is full.
        public var queued: Int
        /// Dropped because the link's queue stayed full.
        public var dropped: Int

        public init(peer: String, sent: Int, queued: Int, dropped: Int) {
            self.peer = peer
            self.sent = sent
            self.queued = queued
            self.dropped = dropped
        }
    }

    /// Handed to links since the server was made (links gone included).
    public var sent: Int
    /// Dropped since the server was made (links gone included).
    public var dropped: Int
    /// Each connected link, in the order of their peers' descriptions.
    public var links: [Link]
}

/// A `notify(characteristic:value:waitingUpTo:)` call whose notification waits for room in
/// some links' queues: resumed when the last of them took it, at its timeout, or when its
/// task is cancelled, whichever comes first.
package final class ParkedNotification: Sendable {
    private struct State {
        var continuation: CheckedContinuation<NotificationDelivery, Never>?
        var delivery = NotificationDelivery()
        var waitingOn: Set<ObjectIdentifier> = []
        var timer: (any ScheduledTimer)?
        var finished = false
    }
    /// Touched only on the server's queue.
    private let state: QueueConfined<State>

    init(queue: DispatchQueue) { state = QueueConfined(State(), on: queue) }

    var continuation: CheckedContinuation<NotificationDelivery, Never>? {
        _read { yield state.value.continuation }
        _modify { yield &state.value.continuation }
    }
    var delivery: NotificationDelivery {
        _read { yield state.value.delivery }
        _modify { yield &state.value.delivery }
    }
    /// Links whose queue the notification still waits for.
    var waitingOn: Set<ObjectIdentifier> {
        _read { yield state.value.waitingOn }
        _modify { yield &state.value.waitingOn }
    }
    var timer: (any ScheduledTimer)? {
        _read { yield state.value.timer }
        _modify { yield &state.value.timer }
    }
    var finished: Bool {
        _read { yield state.value.finished }
        _modify { yield &state.value.finished }
    }
}

/// One link's notifications (on the server's queue): those held while it cannot send, the
/// calls waiting for room, and its counters. A class, so that sending a notification does
/// not write the server's table of links.
package final class LinkNotifications {
    /// Held while the link cannot send (`ATTServerLinkFlowControl`), oldest first; at most
    /// `notificationQueueLimit`.
    package var outbox: [[UInt8]] = []
    /// `whenCanSend` was asked and has not called back yet.
    package var awaitingRoom = false
    /// Notifications of waiting calls, oldest first; at most `notificationQueueLimit`.
    package var parked: [(send: ParkedNotification, pdu: [UInt8])] = []
    /// Handed to the link, and dropped because its queue stayed full.
    package var sent = 0
    package var dropped = 0
}

extension GATTServer {
    /// Sends a Handle Value Notification of `value` (cut to ATT_MTU - 3) to every link that
    /// enabled notifications of `characteristic`, and stores the value. A link whose send queue
    /// is full (`ATTServerLinkFlowControl`) gets it queued in the server; when that queue holds
    /// `notificationQueueLimit` already, the call waits for room up to `timeout`, then drops
    /// it for that link and counts the drop. The returned delivery says how many links got it
    /// and how many dropped it: an app that sees drops slows down. A cancelled task stops
    /// waiting at once (links still full drop it).
    ///
    ///     let delivery = await server.notify(characteristic: level, value: [87], waitingUpTo: .milliseconds(500))
    public func notify(characteristic: BluetoothUUID, value: [UInt8], waitingUpTo timeout: Duration) async -> NotificationDelivery {
        let parked = ParkedNotification(queue: queue)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<NotificationDelivery, Never>) in
                queue.async {
                    parked.continuation = c
                    // Cancelled before it started: nothing is sent.
                    if parked.finished { return self.finish(parked) }
                    self.start(parked, characteristic: characteristic, value: value, timeout: timeout)
                }
            }
        } onCancel: {
            queue.async { self.finish(parked) }
        }
    }

    /// Queues the notification on each subscribed link, parks it on the full ones (on the queue).
    private func start(_ parked: ParkedNotification, characteristic: BluetoothUUID, value: [UInt8], timeout: Duration) {
        defer { hooks?.changed(self) }
        guard let valueHandle = valueHandleOnQueue(characteristic), let cccd = cccdHandle(of: characteristic) else { return finish(parked) }
        if let i = table.index(of: valueHandle) { table.attributes[i].value = value }
        for (id, state) in links where !state.ended && (state.cccd[cccd] ?? 0) & 0x0001 != 0 {
            let pdu = ATTPDU.handleValueNotification(handle: valueHandle, value: Array(value.prefix(Int(state.mtu) - 3))).bytes
            if offer(pdu, to: state, id: id) {
                parked.delivery.queued += 1
            } else if timeout > .zero, state.notifications.parked.count < notificationQueueLimit {
                state.notifications.parked.append((parked, pdu))
                parked.waitingOn.insert(id)
            } else {
                countDrop(state)
                parked.delivery.dropped += 1
            }
        }
        if parked.waitingOn.isEmpty { return finish(parked) }
        parked.timer = scheduler.schedule(after: timeout) { [weak self] in self?.finish(parked) }
    }

    /// Ends a waiting call: links it still waits on drop its notification (on the queue).
    func finish(_ parked: ParkedNotification) {
        parked.finished = true
        parked.timer?.cancel()
        parked.timer = nil
        for id in parked.waitingOn {
            if let state = links[id] {
                state.notifications.parked.removeAll { $0.send === parked }
                countDrop(state)
            }
            parked.delivery.dropped += 1
        }
        parked.waitingOn = []
        parked.continuation?.resume(returning: parked.delivery)
        parked.continuation = nil
    }

    /// Sends `pdu` on the link (`state`, id `id`) when it can send and holds nothing back,
    /// else holds it while its queue has room; false when the queue is full (on the queue).
    func offer(_ pdu: [UInt8], to state: LinkState, id: ObjectIdentifier) -> Bool {
        let n = state.notifications
        if n.outbox.isEmpty, state.flow?.canSend ?? true {
            state.link.sendToCentral(pdu)
            n.sent += 1
            notificationsSent += 1
            return true
        }
        guard n.outbox.count < notificationQueueLimit else { return false }
        n.outbox.append(pdu)
        awaitRoom(state, id: id)
        return true
    }

    /// A notification to the link dropped: counted for the link and the server.
    func countDrop(_ state: LinkState) {
        state.notifications.dropped += 1
        notificationsDropped += 1
    }

    /// Asks the link to call back when it can send again, once (on the queue).
    private func awaitRoom(_ state: LinkState, id: ObjectIdentifier) {
        guard !state.notifications.awaitingRoom, let flow = state.flow else { return }
        state.notifications.awaitingRoom = true
        flow.whenCanSend { [weak self] in
            guard let self else { return }
            self.queue.async { self.roomAvailable(link: id) }
        }
    }

    /// The link can send again: its held notifications go, oldest first, while it can, and
    /// the parked ones move into the room that makes (on the queue).
    private func roomAvailable(link id: ObjectIdentifier) {
        defer { hooks?.changed(self) }
        guard let state = links[id] else { return }
        let n = state.notifications
        n.awaitingRoom = false
        var done: [ParkedNotification] = []
        while !state.ended {
            if !n.outbox.isEmpty, state.flow?.canSend ?? true {
                state.link.sendToCentral(n.outbox.removeFirst())
                n.sent += 1
                notificationsSent += 1
            } else if !n.parked.isEmpty, n.outbox.count < notificationQueueLimit {
                let next = n.parked.removeFirst()
                n.outbox.append(next.pdu)
                next.send.delivery.queued += 1
                next.send.waitingOn.remove(id)
                if next.send.waitingOn.isEmpty { done.append(next.send) }
            } else {
                break
            }
        }
        // Calls whose last link took their notification return.
        for send in done { finish(send) }
        if !n.outbox.isEmpty { awaitRoom(state, id: id) }
    }

    /// A link went: what it held is dropped, and the calls parked on it stop waiting for it (on the queue).
    func linkGone(_ state: LinkState, id: ObjectIdentifier) {
        notificationsDropped += state.notifications.outbox.count + state.notifications.parked.count
        for entry in state.notifications.parked {
            entry.send.waitingOn.remove(id)
            entry.send.delivery.dropped += 1
            if entry.send.waitingOn.isEmpty { finish(entry.send) }
        }
    }

    /// The notification counters: totals since the server was made and each connected link's.
    ///
    ///     let stats = await server.notificationStatistics(); print("sent \(stats.sent), dropped \(stats.dropped)")
    public func notificationStatistics() async -> NotificationStatistics {
        await onQueue {
            let links = self.links.values.map {
                NotificationStatistics.Link(peer: $0.link.centralDescription, sent: $0.notifications.sent, queued: $0.notifications.outbox.count,
                                            dropped: $0.notifications.dropped)
            }
            return NotificationStatistics(sent: self.notificationsSent, dropped: self.notificationsDropped, links: links.sorted { $0.peer < $1.peer })
        }
    }
}
