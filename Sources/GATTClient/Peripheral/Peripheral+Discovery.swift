import ATT
import BLEWire
extension Peripheral {
    /// The peer's primary services, discovered on first use (or taken from the cache).
    ///
    ///     for s in try await peripheral.services() { print(s) }
    public func services() async throws(GATTError) -> [GATTService] {
        let p = try await leaseProcedures()
        defer { release(p) }
        if database.services == nil {
            let found = try await perform(.discovering, .services(.all), on: p) { p async throws(GATTProcedureError) in
                try await p.discoverAllPrimaryServices()
            }
            // A concurrent call may have ended its discovery first: the first result stays,
            // with what was discovered under it since.
            if database.services == nil {
                database.services = found
                await storeInCache()
                try await configureServiceChanged(p)
            }
        }
        while let stale = database.staleRanges.first {
            let found = try await perform(.rediscovering, .services(stale), on: p) { p async throws(GATTProcedureError) in
                try await p.discoverAllPrimaryServices(in: stale)
            }
            database.merge(found, rediscovered: stale)
            await storeInCache()
        }
        return database.services ?? []
    }

    /// The characteristics of a service, discovered on first use.
    public func characteristics(of service: ServiceIdentifier) async throws(GATTError) -> [GATTCharacteristic] {
        try await characteristics(of: try await resolve(service))
    }

    /// The characteristics of a discovered service.
    public func characteristics(of service: GATTService) async throws(GATTError) -> [GATTCharacteristic] {
        if let known = database.characteristics[service.handle] { return known }
        let found = try await perform(.discoveringCharacteristics, .attribute(service.uuid, handle: service.handle)) { p async throws(GATTProcedureError) in
            try await p.discoverCharacteristics(of: service)
        }
        // Kept only while the service is still known (a Service Changed indication or a
        // concurrent discovery may have replaced it meanwhile).
        if isKnown(service) {
            keep(found, of: service)
            await storeInCache()
        }
        return found
    }

    /// The services `service` includes (Find Included Services).
    public func includedServices(of service: ServiceIdentifier) async throws(GATTError) -> [GATTIncludedService] {
        let s = try await resolve(service)
        return try await discoverOnce(\.includedServices, at: s.handle, .findingIncludedServices, .attribute(s.uuid, handle: s.handle),
                                      stillKnown: { isKnown(s) }) { p async throws(GATTProcedureError) in try await p.findIncludedServices(of: s) }
    }

    /// The descriptors of a characteristic, discovered on first use.
    public func descriptors(of characteristic: CharacteristicIdentifier) async throws(GATTError) -> [GATTDescriptor] {
        try await descriptors(of: try await resolve(characteristic))
    }

    /// The descriptors of a discovered characteristic.
    public func descriptors(of c: GATTCharacteristic) async throws(GATTError) -> [GATTDescriptor] {
        try await discoverOnce(\.descriptors, at: c.valueHandle, .discoveringDescriptors, .attribute(c.uuid, handle: c.valueHandle),
                               stillKnown: { isKnown(c) }) { p async throws(GATTProcedureError) in try await p.discoverDescriptors(of: c) }
    }

    /// What is under one attribute, discovered once: `table[key]` when known; otherwise
    /// `discover` runs, and its result is kept (and cached) while `stillKnown()` holds after it
    /// (a Service Changed indication or a concurrent discovery may have replaced the attribute).
    private func discoverOnce<Found>(_ table: WritableKeyPath<GATTDatabaseSnapshot, [UInt16: [Found]]>, at key: UInt16,
                                     _ operation: GATTOperation, _ target: GATTTarget, stillKnown: () -> Bool,
                                     _ discover: (GATTProcedures) async throws(GATTProcedureError) -> [Found]) async throws(GATTError) -> [Found] {
        if let known = database[keyPath: table][key] { return known }
        let found = try await perform(operation, target, discover)
        if stillKnown() {
            database[keyPath: table][key] = found
            await storeInCache()
        }
        return found
    }

    /// Stores `found` as `service`'s characteristics. A concurrent discovery may have stored
    /// others meanwhile: the descriptors of those no longer listed go with them.
    func keep(_ found: [GATTCharacteristic], of service: GATTService) {
        for old in database.characteristics[service.handle] ?? [] where !found.contains(old) {
            database.descriptors[old.valueHandle] = nil
        }
        database.characteristics[service.handle] = found
    }

    /// Whether `service` is still one of the discovered services (what is discovered under a
    /// service is kept only then).
    func isKnown(_ service: GATTService) -> Bool {
        database.services?.contains(service) ?? false
    }

    /// Whether `c` is still one of the discovered characteristics of a known service.
    func isKnown(_ c: GATTCharacteristic) -> Bool {
        database.characteristics.values.contains { $0.contains(c) }
    }

    // MARK: Resolution

    /// The discovered service for `id`, or `.serviceNotFound` listing what the peer has.
    public func resolve(_ id: ServiceIdentifier) async throws(GATTError) -> GATTService {
        let all = try await services()
        guard let s = all.first(where: { $0.uuid == id.uuid }) else {
            throw .serviceNotFound(id.uuid, peer: peerAddress, available: all.map(\.uuid))
        }
        return s
    }

    /// The discovered characteristic for `id`, or `.characteristicNotFound`.
    public func resolve(_ id: CharacteristicIdentifier) async throws(GATTError) -> GATTCharacteristic {
        let all = try await characteristics(of: try await resolve(id.service))
        guard let c = all.first(where: { $0.uuid == id.uuid }) else {
            throw .characteristicNotFound(id.uuid, service: id.service.uuid, peer: peerAddress, available: all.map(\.uuid))
        }
        return c
    }

    /// The discovered descriptor for `id`, or `.descriptorNotFound`.
    public func resolve(_ id: DescriptorIdentifier) async throws(GATTError) -> GATTDescriptor {
        let c = try await resolve(id.characteristic)
        let all = try await descriptors(of: c)
        guard let d = all.first(where: { $0.uuid == id.uuid }) else {
            throw .descriptorNotFound(id.uuid, characteristic: c.uuid, peer: peerAddress, available: all.map(\.uuid))
        }
        return d
    }

    // MARK: Service Changed (Vol 3, Part G, 7.1)

    /// Enables Service Changed indications when the peer has the characteristic. Uses `p`
    /// directly (it also runs while the bearer is being prepared).
    func configureServiceChanged(_ p: GATTProcedures) async throws(GATTError) {
        guard let gatt = database.services?.first(where: { $0.uuid == GATTAttributeType.genericAttributeService }) else { return }
        var target = GATTTarget.attribute(GATTAttributeType.serviceChanged, handle: nil)
        do throws(GATTProcedureError) {
            var chars = database.characteristics[gatt.handle] ?? []
            if database.characteristics[gatt.handle] == nil {
                chars = try await p.discoverCharacteristics(of: gatt)
                if isKnown(gatt) { keep(chars, of: gatt) }
            }
            guard let sc = chars.first(where: { $0.uuid == GATTAttributeType.serviceChanged }), sc.properties.contains(.indicate) else { return }
            target = .attribute(sc.uuid, handle: sc.valueHandle)
            var descs = database.descriptors[sc.valueHandle] ?? []
            if database.descriptors[sc.valueHandle] == nil {
                descs = try await p.discoverDescriptors(of: sc)
                if isKnown(sc) { database.descriptors[sc.valueHandle] = descs }
            }
            routes.serviceChangedHandle = sc.valueHandle
            guard let cccd = descs.first(where: { $0.uuid == GATTAttributeType.clientCharacteristicConfiguration }) else { return }
            try await p.writeClientConfiguration(handle: cccd.handle, value: 0x0002)
        } catch {
            throw gattError(error, .enablingIndications, target)
        }
        await storeInCache()
    }

    /// A Service Changed indication (already confirmed by the bearer): the affected range is
    /// forgotten now and re-discovered on the next use, merged with the ranges of earlier
    /// indications not re-discovered yet (one re-discovery for a burst); streams of
    /// characteristics in it end with `.serviceChanged`. A range that is not one (start 0
    /// or after end) counts as every handle.
    func serviceChanged(_ value: [UInt8]) {
        guard value.count == 4 else { return }
        var range = ATTHandleRange(start: UInt16(value[0]) | UInt16(value[1]) << 8, end: UInt16(value[2]) | UInt16(value[3]) << 8)
        if range.start == 0 || range.start > range.end { range = .all }
        database.invalidate(range)
        database.databaseHash = nil
        let affected = routes.handles.filter { $0 >= range.start && $0 <= range.end }
        for h in affected {
            subscriptions[h] = nil
            guard let route = routes.remove(h) else { continue }
            let error = GATTError.serviceChanged(range: range, peer: peerAddress)
            route.notifications.finish(throwing: error)
            route.indications.finish(throwing: error)
        }
        // One cache store for a burst: the first indication schedules it, it stores the
        // snapshot as it is then.
        if cache != nil, !cacheStoreScheduled {
            cacheStoreScheduled = true
            ownedTask { await $0.storeScheduledSnapshot() }
        }
    }

    /// Database Out Of Sync (0x12, Vol 3, Part G, 2.5.2.1, robust caching): the server's
    /// database changed and this client did not know. Everything discovered is forgotten and
    /// re-discovered on the next use; the cache (and its file) no longer holds the old one.
    func databaseOutOfSync() {
        database.invalidate(.all)
        database.databaseHash = nil
        if cache != nil, !cacheStoreScheduled {
            cacheStoreScheduled = true
            ownedTask { await $0.storeScheduledSnapshot() }
        }
    }

    private func storeScheduledSnapshot() async {
        cacheStoreScheduled = false
        await storeInCache()
    }

    func storeInCache() async {
        guard let cache, let peer else { return }
        await cache.store(database, for: peer)
    }
}
