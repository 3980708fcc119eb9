import BLECore

/// What a `Restoration` needs of a `Peripheral` beyond its public API: the handles behind a
/// subscription, the peer's Database Hash, and a subscription whose CCCD the server kept.
extension Peripheral {
    /// The value and CCCD handles of the subscription to `characteristic`, once subscribed.
    func subscriptionHandles(_ characteristic: CharacteristicIdentifier) async throws(GATTError) -> (value: UInt16, cccd: UInt16) {
        let c = try await resolve(characteristic)
        guard let sub = subscriptions[c.valueHandle] else {
            throw .descriptorNotFound(GATTAttributeType.clientCharacteristicConfiguration, characteristic: c.uuid, peer: peerAddress, available: [])
        }
        return (c.valueHandle, sub.cccdHandle)
    }

    /// The peer's Database Hash (0x2B2A) as read on this link (nil: the peer has none), which
    /// the first request on a peripheral with a cache reads.
    func currentDatabaseHash() async throws(GATTError) -> [UInt8]? {
        _ = try await procedures()
        return database.databaseHash
    }

    /// Subscribes to the characteristic at `valueHandle` whose CCCD (`cccdHandle`) the server
    /// already holds at the value the subscribers need: a bonded server keeps its clients'
    /// CCCDs across connections (Core Spec Vol 3, Part G, 3.3.3.3), so nothing is written.
    /// The handles come from a stored subscription whose Database Hash is the peer's now.
    /// Later subscribers and the last one leaving write the CCCD as usual.
    func subscribeKept(
        _ characteristic: CharacteristicIdentifier, valueHandle: UInt16, cccdHandle: UInt16, indications: Bool,
        bufferingPolicy: StreamBufferingPolicy
    ) -> NotificationStream<[UInt8]> {
        if subscriptions[valueHandle] == nil {
            subscriptions[valueHandle] = Subscription(cccdHandle: cccdHandle, waiters: Waiters(executor: executor, scheduler: scheduler))
        }
        let route = self.route(for: valueHandle)
        let subscribed = (indications ? route.indications : route.notifications).subscribe(bufferingPolicy: bufferingPolicy)
        // In the same turn as the subscribe: the subscriber-count hop that follows finds the
        // CCCD as wanted and writes nothing.
        subscriptions[valueHandle]?.written = route.configuration
        return NotificationStream(bytes: LazySubscription(peripheral: self, characteristic: characteristic, indications: indications,
                                                          bufferingPolicy: bufferingPolicy, subscribed: subscribed))
    }
}
