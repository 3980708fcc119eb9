import BLECore
import GATTClient
import SMP
import BLEWire

extension Gateway {
    /// Answers each command on `responses/<id>` (QoS 1); commands run concurrently, so a slow
    /// connect does not hold up a read on another link.
    func commandLoop() async {
        for await message in publisher.incoming {
            if let fleet, message.topic == fleet.topics.commands {
                // A fleet command: the device's holder answers it on the fleet's responses topic.
                let decoded = GatewayCommand.decode(message.payload)
                let address = try? decoded.get().address?.address
                guard await fleet.answers(for: address) else { continue }
                let topic = { (id: String) in fleet.topics.response(id) }
                switch decoded {
                case .failure(let rejected):
                    await answer(rejected.id, command: nil, .failure(rejected.error), on: topic(rejected.id))
                case .success(let command):
                    Task { await self.execute(command, answerOn: topic(command.id)) }
                }
                continue
            }
            guard message.topic == topics.commands else {
                await fleet?.receive(message)
                continue
            }
            switch GatewayCommand.decode(message.payload) {
            case .failure(let rejected):
                await answer(rejected.id, command: nil, .failure(rejected.error))
            case .success(let command):
                Task { await self.execute(command) }
            }
        }
    }

    func execute(_ command: GatewayCommand, answerOn topic: String? = nil) async {
        let result: Result<[(String, JSONValue)], CommandError>
        do throws(CommandError) {
            result = .success(try await perform(command))
        } catch {
            result = .failure(error)
        }
        await answer(command.id, command: command.kind.rawValue, result, on: topic)
    }

    func answer(_ id: String, command: String?, _ result: Result<[(String, JSONValue)], CommandError>, on topic: String? = nil) async {
        var pairs: [(String, JSONValue)] = [("id", .string(id))]
        if let command { pairs.append(("command", .string(command))) }
        switch result {
        case .success(let extra):
            pairs.append(("ok", .bool(true)))
            pairs += extra
        case .failure(let error):
            pairs.append(("ok", .bool(false)))
            pairs.append(("error", .object([("code", .string(error.code)), ("message", .string(error.message))])))
        }
        await publisher.enqueue(MQTTMessage(topic: topic ?? topics.response(id), payload: JSONValue.object(pairs).bytes, qos: .atLeastOnce))
    }

    func perform(_ command: GatewayCommand) async throws(CommandError) -> [(String, JSONValue)] {
        switch command.kind {
        case .scan:
            applyScan(command.enabled ?? true)
            return [("scanning", .bool(scanTask != nil))]
        case .connect:
            guard let address = command.address else { throw .bad("connect needs \"address\"") }
            _ = try await link(to: address, connectIfNeeded: true)
            return [("address", .string(address.address.description))]
        case .disconnect:
            guard let address = command.address else { throw .bad("disconnect needs \"address\"") }
            guard let link = links[address] else { throw CommandError("notConnected", "no link to \(address); send connect first") }
            deviceTasks[address]?.cancel()
            deviceTasks[address] = nil
            links[address] = nil
            do { try await link.connection.disconnect() } catch { throw .connection(error) }
            return [("address", .string(address.address.description))]
        case .read:
            let (peripheral, c) = try await target(command)
            do {
                let value = try await peripheral.read(c.identifier)
                return [("value", .string(value.hexUpper))]
            } catch { throw .gatt(error) }
        case .write:
            let (peripheral, c) = try await target(command)
            do {
                try await peripheral.write(command.value ?? [], to: c.identifier, type: command.withoutResponse ? .withoutResponse : .withResponse)
                return []
            } catch { throw .gatt(error) }
        case .subscribe:
            let (peripheral, c) = try await target(command)
            guard let address = command.address else { throw .bad("subscribe needs \"address\"") }
            let topic = topics.characteristic(address.address, service: c.service, characteristic: c.characteristic)
            if commandSubscriptions[topic] == nil {
                let values: NotificationStream<[UInt8]>
                do { values = try await peripheral.subscribe(to: c.identifier) } catch { throw .gatt(error) }
                let publisher = self.publisher
                commandSubscriptions[topic] = Task {
                    do {
                        for try await value in values {
                            await publisher.enqueue(MQTTMessage(topic: topic, payload: Gateway.valuePayload(value), qos: .atLeastOnce))
                        }
                    } catch {}
                }
            }
            return [("topic", .string(topic))]
        case .unsubscribe:
            guard let address = command.address, let c = command.characteristic else { throw .bad("unsubscribe needs \"address\", \"service\" and \"characteristic\"") }
            let topic = topics.characteristic(address.address, service: c.service, characteristic: c.characteristic)
            guard let task = commandSubscriptions.removeValue(forKey: topic) else {
                throw CommandError("notSubscribed", "no subscription to \(c.characteristic) of \(address) from a command")
            }
            task.cancel()
            return [("topic", .string(topic))]
        }
    }

    func target(_ command: GatewayCommand) async throws(CommandError) -> (Peripheral, GatewayConfig.CharacteristicRef) {
        guard let address = command.address, let c = command.characteristic else {
            throw .bad("\(command.kind.rawValue) needs \"address\", \"service\" and \"characteristic\"")
        }
        guard let link = links[address] else { throw CommandError("notConnected", "no link to \(address); send connect first") }
        return (link.peripheral, c)
    }

    /// The held link to `address`, made when `connectIfNeeded`.
    func link(to address: LEAddress, connectIfNeeded: Bool, policy: ReconnectPolicy = .never) async throws(CommandError) -> Link {
        if let link = links[address], await link.connection.isConnected { return link }
        guard connectIfNeeded else { throw CommandError("notConnected", "no link to \(address); send connect first") }
        let connection: Connection
        do { connection = try await central.connect(address, timeout: .seconds(10), reconnect: policy) } catch { throw .connection(error) }
        return try await hold(connection)
    }

    /// Sets a new link up and holds it: the security its device's config asks for, then its
    /// GATT client on the gateway's cache.
    func hold(_ connection: Connection) async throws(CommandError) -> Link {
        let address = connection.peer
        // A configured device that asks for a security level gets it before anything else:
        // encrypted with its bond from the store, or paired (Just Works) and bonded.
        let level = config.devices.first { $0.address == address }?.security
        if let level {
            do throws(PairingError) {
                try await connection.requireSecurity(level, store: bonds)
            } catch {
                await Self.end(connection)
                throw CommandError("security", error.description)
            }
        }
        let peripheral: Peripheral
        do { peripheral = try await Peripheral(connection: connection, cache: gattCache) } catch {
            await Self.end(connection)
            throw .gatt(error)
        }
        if level != nil { await peripheral.setSecurityRaiser(connection.securityRaiser(store: bonds)) }
        let link = Link(connection: connection, peripheral: peripheral)
        links[address] = link
        return link
    }
}

extension Gateway {
    /// Ends a link that is not kept, in a task of its own: the caller may be cancelled (a fleet
    /// claim lost while connecting), and a disconnect from a cancelled task could end before the
    /// command is sent, leaving the device connected to nobody's use.
    static func end(_ connection: Connection) async {
        await Task { try? await connection.disconnect() }.value
    }
}
