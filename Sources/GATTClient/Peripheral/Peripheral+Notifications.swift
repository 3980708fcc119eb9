import BLECore
extension Peripheral {
    /// Subscribes to a characteristic's notifications (or indications) and returns once the
    /// peer's CCCD is set: nothing sent after this returns is missed. Any number of
    /// subscribers share one CCCD write; it is cleared after the last one stops iterating.
    /// The stream throws `GATTError.disconnected` when the link ends for good. This is the one
    /// way to a characteristic's values as they change; `subscribe(to:as:)` decodes them.
    ///
    /// The stream is bounded (`StreamBufferingPolicy.notificationDefault` unless given):
    /// notifications beyond the bound are dropped as the policy says and counted (the
    /// stream's `droppedCount`, and `droppedValueCount(for:)` for all the characteristic's
    /// subscribers), or end the stream with `StreamError.consumerTooSlow`;
    /// indications are never dropped, each is confirmed once it is in the buffer, so a slow
    /// consumer slows the server instead of growing memory.
    ///
    ///     let values = try await peripheral.subscribe(to: measurement)
    public func subscribe(
        to characteristic: CharacteristicIdentifier, indications: Bool = false,
        bufferingPolicy: StreamBufferingPolicy = .notificationDefault
    ) async throws(GATTError) -> NotificationStream<[UInt8]> {
        let subscribed = try await subscription(to: characteristic, indications: indications, bufferingPolicy: bufferingPolicy)
        let source = LazySubscription(peripheral: self, characteristic: characteristic, indications: indications,
                                      bufferingPolicy: bufferingPolicy, subscribed: subscribed)
        return NotificationStream(bytes: source)
    }

    /// Subscribes as `subscribe(to:indications:bufferingPolicy:)` does, and decodes each value
    /// as `T`; a value that does not decode ends the stream with `GATTError.invalidValue`.
    ///
    ///     for try await reading in try await peripheral.subscribe(to: measurement, as: HeartRateMeasurement.self) { ... }
    public func subscribe<T: GATTDecodable & Sendable>(
        to characteristic: CharacteristicIdentifier, as type: T.Type, indications: Bool = false,
        bufferingPolicy: StreamBufferingPolicy = .notificationDefault
    ) async throws(GATTError) -> NotificationStream<T> {
        let subscribed = try await subscription(to: characteristic, indications: indications, bufferingPolicy: bufferingPolicy)
        let source = LazySubscription(peripheral: self, characteristic: characteristic, indications: indications,
                                      bufferingPolicy: bufferingPolicy, subscribed: subscribed)
        return NotificationStream(source: source, transform: decoder(characteristic))
    }

    /// The subscriber behind every `NotificationStream`, iterated directly by it.
    func subscription(
        to characteristic: CharacteristicIdentifier, indications: Bool,
        bufferingPolicy: StreamBufferingPolicy
    ) async throws(GATTError) -> MulticastSubscription<[UInt8]> {
        if let terminalError { throw terminalError }
        let c = try await resolve(characteristic)
        let needed: GATTCharacteristicProperties = indications ? .indicate : .notify
        guard c.properties.contains(needed) else {
            throw .notSupported(operation: indications ? .indications : .notifications, target: .attribute(c.uuid, handle: c.valueHandle),
                                properties: c.properties, peer: peerAddress)
        }
        let handle = c.valueHandle
        if subscriptions[handle] == nil {
            let descs = try await descriptors(of: c)
            guard let cccd = descs.first(where: { $0.uuid == GATTAttributeType.clientCharacteristicConfiguration }) else {
                throw .descriptorNotFound(GATTAttributeType.clientCharacteristicConfiguration, characteristic: c.uuid,
                                          peer: peerAddress, available: descs.map(\.uuid))
            }
            if subscriptions[handle] == nil { subscriptions[handle] = Subscription(cccdHandle: cccd.handle, waiters: Waiters(executor: executor, scheduler: scheduler)) }
        }
        let route = self.route(for: handle)
        let subscription = (indications ? route.indications : route.notifications).subscribe(bufferingPolicy: bufferingPolicy)
        do throws(GATTError) {
            try await reconcile(handle, target: .attribute(c.uuid, handle: handle))
        } catch {
            // Dropping `subscription` unsubscribes it; the CCCD follows the remaining subscribers.
            throw error
        }
        return subscription
    }

    /// Values the buffering policies of `characteristic`'s current and past subscribers
    /// dropped because their consumers were behind (notifications, or indications).
    ///
    ///     if try await peripheral.droppedValueCount(for: measurement) > 0 { print("reader too slow") }
    public func droppedValueCount(for characteristic: CharacteristicIdentifier, indications: Bool = false) async throws(GATTError) -> Int {
        let c = try await resolve(characteristic)
        guard let route = routes.route(c.valueHandle) else { return 0 }
        return (indications ? route.indications : route.notifications).droppedCount
    }

    /// Subscribes to `response`'s notifications, then writes `value` to `characteristic`,
    /// and returns the first notification (a request/response exchange over a control point).
    /// The task that reads the notification ends before the call returns; `Central.close()`
    /// ends the call with `GATTError.disconnected`.
    ///
    ///     let reply = try await peripheral.writeAndAwaitNotification([0x01], to: controlPoint, response: controlPoint)
    public func writeAndAwaitNotification(
        _ value: some GATTEncodable, to characteristic: CharacteristicIdentifier, type: GATTWriteType = .withResponse,
        response: CharacteristicIdentifier, indication: Bool = false, timeout: Duration = .seconds(10)
    ) async throws(GATTError) -> [UInt8] {
        let stream = try await subscribe(to: response, indications: indication)
        try await write(value, to: characteristic, type: type)
        let target = GATTTarget.attribute(response.uuid, handle: try await resolve(response).valueHandle)
        let peerName = peerAddress
        let cancelled = GATTError.cancelled(operation: .awaitingNotification, target: target)
        let expired = GATTError.timeout(operation: .awaitingNotification, target: target, peer: peerName)
        let reply = Waiters<[UInt8], GATTError>(executor: executor, scheduler: scheduler)
        var consumer: Task<Void, Never>?
        let result = await reply.wait(deadline: (timeout, .failure(expired)), cancelled: { _ in .failure(cancelled) }) { [executor] id in
            consumer = Task {
                var it = stream.makeAsyncIterator()
                let first: Result<[UInt8], GATTError>
                do {
                    if let v = try await it.next() { first = .success(v) }
                    else { first = .failure(.disconnected(peer: peerName, reason: "the stream ended")) }
                } catch let e as GATTError {
                    first = .failure(e)
                } catch {
                    first = .failure(cancelled)
                }
                executor.queue.async { reply.resume(id, with: first) }
            }
        }
        // The consumer never outlives the call: cancelled (its stream then ends) and awaited.
        consumer?.cancel()
        await consumer?.value
        return try result.get()
    }

    // MARK: Internals

    package nonisolated func decoder<T: GATTDecodable & Sendable>(_ c: CharacteristicIdentifier) -> @Sendable ([UInt8]) throws -> T {
        let peer = peerAddress
        return { bytes in
            do throws(GATTValueError) { return try T(gattValue: bytes) } catch {
                throw GATTError.invalidValue(error, target: .attribute(c.uuid, handle: nil), peer: peer)
            }
        }
    }

    /// A stream that subscribes on its first `next()` (the seed's `notifications(for:)`, module BLESeed).
    package nonisolated func lazyStream<T: Sendable>(_ c: CharacteristicIdentifier, indications: Bool, _ policy: StreamBufferingPolicy,
                                              _ transform: @escaping @Sendable ([UInt8]) throws -> T) -> NotificationStream<T> {
        NotificationStream(source: LazySubscription(peripheral: self, characteristic: c, indications: indications, bufferingPolicy: policy),
                           transform: transform)
    }

    func route(for handle: UInt16) -> NotificationRoutes.Route {
        if let r = routes.route(handle) { return r }
        let r = NotificationRoutes.Route(executor: executor, handle: handle, peer: peerDescription)
        let change: @Sendable (Int) -> Void = { [weak self] _ in
            self?.assumeIsolated { $0.subscribersChanged(handle) }
        }
        r.notifications.onSubscriberCountChange = change
        r.indications.onSubscriberCountChange = change
        routes.add(r, for: handle)
        return r
    }

    func subscribersChanged(_ handle: UInt16) {
        guard let sub = subscriptions[handle], !sub.writing, terminalError == nil,
              sub.written != (routes.route(handle)?.configuration ?? 0) else { return }
        ownedTask { try? await $0.reconcile(handle, target: .handle(handle)) }
    }

    /// Writes the CCCD until it matches what the subscribers need; one write at a time.
    func reconcile(_ handle: UInt16, target: GATTTarget) async throws(GATTError) {
        while let sub = subscriptions[handle] {
            if sub.writing {
                try await waitForCCCDWrite(handle, target: target)
                continue
            }
            if sub.written == (routes.route(handle)?.configuration ?? 0) { return }
            let p = try await leaseProcedures()
            defer { release(p) }
            // `leaseProcedures()` can suspend (a restored link being prepared), and another
            // reconcile may have started or finished the write meanwhile: look again.
            guard let now = subscriptions[handle], !now.writing else { continue }
            let wanted = routes.route(handle)?.configuration ?? 0
            if now.written == wanted { return }
            subscriptions[handle]?.writing = true
            var failure: GATTError?
            do throws(GATTError) {
                // A CCCD that needs encryption makes the peer refuse the write: `perform` raises
                // the link's security and writes it again.
                try await perform(wanted == 0 ? .disablingNotifications : .subscribing, target, on: p) { p async throws(GATTProcedureError) in
                    try await p.writeClientConfiguration(handle: sub.cccdHandle, value: wanted)
                }
                subscriptions[handle]?.written = wanted
            } catch {
                failure = error
            }
            subscriptions[handle]?.writing = false
            subscriptions[handle]?.waiters.resumeAll(with: .success(true))
            if let failure { throw failure }
        }
    }

    /// Waits until the CCCD write under way at `handle` ends; a cancelled caller stops
    /// waiting at once (the write goes on).
    private func waitForCCCDWrite(_ handle: UInt16, target: GATTTarget) async throws(GATTError) {
        guard let sub = subscriptions[handle], sub.writing else { return }
        let ended = await sub.waiters.wait(cancelled: { _ in .success(false) }).get()
        if !ended { throw .cancelled(operation: .waitingForCCCDWrite, target: target) }
    }

    func reconcile(_ handle: UInt16) async throws(GATTError) {
        try await reconcile(handle, target: .handle(handle))
    }
}

