import BLECore
import GATTClient
import BLEWire

extension Gateway {
    /// Holds the link to a configured device: connects through the background connections
    /// (again after the device's backoff when the link ends or none came), subscribes, reads
    /// periodically.
    func startDevice(_ device: GatewayConfig.Device) {
        deviceTasks[device.address] = Task { await self.holdLink(device) }
    }

    /// Failed connection attempts in a row after which a fleet gateway hands a device on.
    static let fleetAttemptsBeforeGivingUp = 3

    /// Holds the device's link for as long as the task runs; the device is among the
    /// background connections meanwhile.
    func holdLink(_ device: GatewayConfig.Device) async {
        await background.want(device.address)
        await keepLink(device)
        await background.release(device.address)
    }

    /// How long one attempt waits for the device's background connection.
    static let backgroundLinkTimeout: Duration = .seconds(10)

    /// The device's link: the one a command made, or the next one the background connections
    /// (`Central.connect(whenSeen:)`, the Filter Accept List) make as it comes into range.
    func backgroundLink(_ device: GatewayConfig.Device) async throws(CommandError) -> Link {
        if let link = links[device.address], await link.connection.isConnected { return link }
        let connection: Connection
        do { connection = try await background.link(to: device.address, timeout: Self.backgroundLinkTimeout) } catch { throw .connection(error) }
        if let restoration, !restorationUnusable { return try await holdRestored(connection, device, restoration) }
        return try await hold(connection)
    }

    private func keepLink(_ device: GatewayConfig.Device) async {
        var attempt = 0
        while !Task.isCancelled {
            do throws(CommandError) {
                let link = try await backgroundLink(device)
                attempt = 0
                counters.linksUp.add(1, ordering: .relaxed)
                await serve(device, link)
                counters.linksUp.subtract(1, ordering: .relaxed)
                if links[device.address]?.connection === link.connection { links[device.address] = nil }
                // In a task of its own: when a reload removed the device, this task is cancelled,
                // and a disconnect from it would end before the command is sent.
                let connection = link.connection
                await Task { try? await connection.disconnect(timeout: .seconds(2)) }.value
            } catch {
                await publishLinkState(device.address, "error", error.description)
                // In a fleet, a device this gateway cannot reach goes to another.
                if let fleet, attempt + 1 >= Self.fleetAttemptsBeforeGivingUp {
                    await fleet.giveUp(device.address.address)
                }
            }
            if Task.isCancelled { return }
            attempt += 1
            guard let delay = device.reconnect.policy.delay(reason: .connectionFailedToBeEstablished, attempt: attempt) else { return }
            do { try await Task.sleep(for: delay) } catch { return }
        }
    }

    /// Subscribes (each CCCD set before going on; through the restoration, which stores the
    /// subscription, when there is one; a subscription it brought back is used as it is),
    /// publishes the link state `connected` on
    /// `ble/GWID/devices/<ADDRESS>/link`, then forwards notifications and runs the periodic
    /// reads until the link is gone for good or the task is cancelled.
    func serve(_ device: GatewayConfig.Device, _ link: Link) async {
        let publisher = self.publisher, topics = self.topics, peripheral = link.peripheral
        let address = device.address.address
        var streams: [(String, NotificationStream<[UInt8]>)] = []
        for c in device.subscribe {
            let topic = topics.characteristic(address, service: c.service, characteristic: c.characteristic)
            if let restored = link.restored?.streams[c.identifier] {
                streams.append((topic, restored))
                continue
            }
            do {
                if let restoration, let restored = link.restored, !restorationUnusable {
                    streams.append((topic, try await restoration.subscribe(c.identifier, on: restored)))
                } else {
                    streams.append((topic, try await peripheral.subscribe(to: c.identifier)))
                }
            } catch {
                if let error = error as? RestorationError { restorationFailed(error) }
                await publishLinkState(device.address, "error", "\(error)")
                return
            }
        }
        await publishLinkState(device.address, "connected", nil)
        await withTaskGroup(of: Void.self) { group in
            for (topic, values) in streams {
                group.addTask {
                    do {
                        for try await value in values {
                            await publisher.enqueue(MQTTMessage(topic: topic, payload: Gateway.valuePayload(value), qos: .atLeastOnce))
                        }
                    } catch {}
                }
            }
            for r in device.read {
                let c = r.characteristic
                let topic = topics.characteristic(address, service: c.service, characteristic: c.characteristic)
                group.addTask {
                    while !Task.isCancelled {
                        do throws(GATTError) {
                            let value = try await peripheral.read(c.identifier)
                            await publisher.enqueue(MQTTMessage(topic: topic, payload: Gateway.valuePayload(value), qos: .atLeastOnce))
                        } catch let error where error.isLinkGone {
                            return
                        } catch {
                            // A refused read (ATT error) is published and retried at the next period.
                            await publisher.enqueue(MQTTMessage(topic: topic + "/error", payload: JSONValue.object([("message", .string(error.description))]).bytes))
                        }
                        do { try await Task.sleep(for: r.interval) } catch { return }
                    }
                }
            }
            let connection = link.connection
            group.addTask {
                // The link's own end: a drop the stack does not reconnect.
                for await event in await connection.events() {
                    switch event {
                    case .disconnected(_, willReconnect: false), .reconnectFailed: return
                    default: continue
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
        await publishLinkState(device.address, "disconnected", nil)
    }

    /// Retained `{"state":"connected"|"disconnected"|"error"}` on `ble/GWID/devices/<ADDRESS>/link`.
    func publishLinkState(_ address: LEAddress, _ state: String, _ message: String?) async {
        var pairs: [(String, JSONValue)] = [("state", .string(state))]
        if let message { pairs.append(("message", .string(message))) }
        await publisher.enqueue(MQTTMessage(topic: topics.device(address.address) + "/link", payload: JSONValue.object(pairs).bytes,
                                            qos: .atLeastOnce, retain: true))
    }
}

extension GATTError {
    var isLinkGone: Bool {
        switch self {
        case .disconnected, .connection, .cancelled: return true
        default: return false
        }
    }
}
