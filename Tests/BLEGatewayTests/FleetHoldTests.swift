import BLECore
import BLEGateway
import BLETestSupport
import Foundation
import GATTServer
import Testing
import BLEWire

/// Held connections in a fleet: three `ble gateway` processes, each with its own virtual
/// controller hearing 30 advertisers at its own RSSI; 6 of them are configured devices (the
/// heart-rate monitor database, Battery Level 0x2A19 read and notify), one link at a time each
/// (`PeripheralLink`). 3 slots per gateway.
@Suite(.serialized) struct FleetHoldTests {
    static let config = #"{"mqtt": {"keepAliveSeconds": 5}, "homeAssistantDiscovery": true, "#
        + #""fleet": {"name": "house", "slots": 3, "awaySeconds": 60, "claimDelaySeconds": 0.5, "graceSeconds": 30}, "#
        + #""scan": {"passive": true, "publishIntervalSeconds": 3600, "lostAfterSeconds": 3600}, "devices": ["#
        + (0..<6).map { #"{"address": "\#(held($0).address)", "subscribe": [{"service": "180F", "characteristic": "2A19"}], "#
            + #""reconnect": {"initialDelaySeconds": 0.2, "maximumDelaySeconds": 1}}"# }.joined(separator: ", ") + "]}"

    static func held(_ i: Int) -> LEAddress { LEAddress(BluetoothAddress(rawValue: 0xC3_BB_00_00_00_00 | UInt64(i)), type: .random) }
    static func sensor(_ i: Int) -> LEAddress { LEAddress(BluetoothAddress(rawValue: 0xC3_CC_00_00_00_00 | UInt64(i)), type: .random) }
    static func compact(_ a: LEAddress) -> String { String(a.address.rawValue, radix: 16, uppercase: true) }

    /// Held device `i` is nearest gateway `i % 3`: -40 dB there, 20 dB less per gateway farther.
    static func rssi(_ g: Int, _ i: Int) -> Int8 { Int8(-40 - 20 * abs(g - i % 3)) }
    static let batteryLevel = BluetoothUUID(uuid16: 0x2A19)
    /// How long a new holder may take to bring a link up (docs/gateway.md, A device out of
    /// reach): a first attempt that misses the device (10 s), the backoff (1 s at most here) and
    /// a second attempt, with room for a loaded machine.
    static let linkBound: Duration = .seconds(25)

    static func claimHolder(_ m: MQTTMessage) -> String? {
        guard let r = m.text.range(of: #"{"holder":""#) else { return nil }
        return String(m.text[r.upperBound...].prefix { $0 != "\"" })
    }

    @Test func eachHeldDeviceIsHeldOnceByItsNearestGatewayAndFailsOverWhenItsHolderDies() async throws {
        var servers: [[GATTServer]] = Array(repeating: [], count: 3)
        // One link per held device across the three radios.
        let links = (0..<6).map { _ in PeripheralLink() }
        let bed = try await FleetBed.start(gateways: 3, config: Self.config) { g, vc in
            let sensors = (0..<24).map { i in
                SimulatedPeripheral(address: Self.sensor(i), advertisingData: [0x02, 0x01, 0x06, 0x04, 0xFF, 0xFF, 0xFF, UInt8(i)],
                                    isConnectable: false, rssi: Int8(-50 - 10 * ((g + i) % 3)))
            }
            let held = (0..<6).map { i in
                let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
                servers[g].append(server)
                return SimulatedPeripheral(address: Self.held(i), advertisingData: [0x02, 0x01, 0x06], rssi: Self.rssi(g, i),
                                           attServer: server, peripheralLink: links[i])
            }
            return sensors + held
        }
        let w = bed.watcher
        func link(_ g: Int, _ i: Int) -> String { "ble/gw\(g)/devices/\(Self.compact(Self.held(i)))/link" }
        func value(_ g: Int, _ i: Int) -> String { "ble/gw\(g)/devices/\(Self.compact(Self.held(i)))/180F/2A19" }

        // Held by the nearest gateway: its claim, its link subscribed, its radio's one connection.
        for i in 0..<6 {
            let claim = try await w.next("ble/house/claims/\(Self.compact(Self.held(i)))") { Self.claimHolder($0) == "gw\(i % 3)" }
            #expect(claim.text.hasPrefix(#"{"holder":"gw\#(i % 3)","rssi":-40,"free":"#), "\(claim.text)")
            #expect(claim.qos == .atLeastOnce)
            _ = try await w.next(link(i % 3, i)) { $0.text == #"{"state":"connected"}"# }
        }
        try await bed.syncAll("held")
        for i in 0..<6 {
            let holders = (0..<3).filter { g in bed.radios[g].connections.contains { $0.peer == Self.held(i) } }
            #expect(holders == [i % 3], "device \(i) linked from \(holders)")
        }
        for i in 0..<6 {
            let n = await servers[i % 3][i].notify(characteristic: Self.batteryLevel, value: [UInt8(0x10 + i)])
            #expect(n == 1)
            _ = try await w.next(value(i % 3, i)) { $0.text == String(format: #"{"value":"%02X"}"#, 0x10 + i) }
        }
        // Discovery: 30 devices, not 90.
        let discovered = Set((await w.messages).map(\.topic).filter { $0.hasPrefix("homeassistant/sensor/ble_") && $0.hasSuffix("/rssi/config") })
        #expect(discovered.count == 30, "\(discovered.count)")

        // A command on the fleet topic reaches the holder and is answered once (the value notified last).
        try w.client.publish(MQTTMessage(topic: "ble/house/commands", text: #"{"id":"f1","command":"read","address":"\#(Self.held(1).address)","service":"180F","characteristic":"2A19"}"#, qos: .atLeastOnce))
        let answer = try await w.next("ble/house/responses/f1")
        #expect(answer.text == #"{"id":"f1","command":"read","ok":true,"value":"11"}"#, "\(answer.text)")
        // A device nobody holds: one gateway (the first online id) says so, once.
        try w.client.publish(MQTTMessage(topic: "ble/house/commands", text: #"{"id":"f2","command":"read","address":"\#(Self.sensor(0).address)","service":"180F","characteristic":"2A19"}"#, qos: .atLeastOnce))
        let refused = try await w.next("ble/house/responses/f2")
        #expect(refused.text.hasPrefix(#"{"id":"f2","command":"read","ok":false,"error":{"code":"notConnected","message":"no link to "#), "\(refused.text)")
        try await bed.syncAll("answered")
        #expect(await w.on("ble/house/responses/f1").count == 1)
        #expect(await w.on("ble/house/responses/f2").count == 1)

        // gw0 dies (its controller with it): devices 0 and 3 held elsewhere within 10 s, their notifications resume.
        let killed = ContinuousClock.now
        bed.children[0].signal(SIGKILL)
        bed.radios[0].closeTransport()
        _ = try await w.next("ble/gw0/status") { $0.text == "offline" }
        var newHolders: [Int: Int] = [:]
        for i in [0, 3] {
            let claim = try await w.next("ble/house/claims/\(Self.compact(Self.held(i)))", timeout: .seconds(10)) {
                Self.claimHolder($0) == "gw1" || Self.claimHolder($0) == "gw2"
            }
            let g = Self.claimHolder(claim) == "gw1" ? 1 : 2
            newHolders[i] = g
            _ = try await w.next(link(g, i), timeout: .seconds(10)) { $0.text == #"{"state":"connected"}"# }
        }
        let failover = ContinuousClock.now - killed
        #expect(failover < .seconds(10), "\(failover)")
        // Device 0 and 3 are heard best by gw1 (-60 dB); it has one slot left, so gw2 takes the other.
        #expect(Set(newHolders.values) == [1, 2], "\(newHolders)")
        for i in [0, 3] {
            let g = newHolders[i] ?? 0
            #expect(await servers[g][i].notify(characteristic: Self.batteryLevel, value: [0x30 + UInt8(i)]) == 1)
            _ = try await w.next(value(g, i)) { $0.text == String(format: #"{"value":"%02X"}"#, 0x30 + i) }
        }
        try await bed.syncAll("failover", gateways: [1, 2])
        for i in 0..<6 {
            let holders = (1..<3).filter { g in bed.radios[g].connections.contains { $0.peer == Self.held(i) } }
            #expect(holders.count == 1, "device \(i) linked from \(holders)")
        }

        // The broker restarts: claims are made again (the next epoch), no device held twice.
        await w.clear()
        try await bed.broker.restart()
        for g in 1...2 { _ = try await w.next("ble/gw\(g)/status", timeout: .seconds(20)) { $0.text == "online" } }
        for i in 0..<6 {
            let expected = i % 3 == 0 ? newHolders[i] ?? 0 : i % 3
            _ = try await w.next("ble/house/claims/\(Self.compact(Self.held(i)))") { Self.claimHolder($0) == "gw\(expected)" && !$0.retain }
        }
        try await bed.syncAll("restarted", gateways: [1, 2])
        for i in 0..<6 {
            let holders = (1..<3).filter { g in bed.radios[g].connections.contains { $0.peer == Self.held(i) } }
            #expect(holders.count == 1, "device \(i) linked from \(holders)")
        }
        #expect(try await bed.stop(gateways: [1, 2]) == [0, 0])
    }

    /// gw0 reaches the broker through a relay; cutting it is a partition: the broker sends gw0's
    /// will and gw1 claims gw0's device, but gw0 keeps its link for the grace period (2 s), so gw1's
    /// connection completes only once gw0 dropped it. Healed, gw0 holds nothing and claims nothing.
    @Test func aGatewayCutOffFromTheBrokerKeepsItsLinkForTheGracePeriodThenDropsIt() async throws {
        let config = Self.config.replacingOccurrences(of: #""graceSeconds": 30"#, with: #""graceSeconds": 2"#)
        let broker = try await Broker.start()
        let relay = try await Relay.start(to: broker)
        let links = (0..<2).map { _ in PeripheralLink() }
        let bed = try await FleetBed.start(gateways: 2, config: config, broker: broker, relayed: [0: relay.url]) { g, vc in
            (0..<2).map { i in
                SimulatedPeripheral(address: Self.held(i), advertisingData: [0x02, 0x01, 0x06], rssi: Self.rssi(g, i),
                                    attServer: GATTServer(database: .heartRateMonitor(), queue: vc.queue), peripheralLink: links[i])
            }
        }
        let w = bed.watcher
        let claim0 = "ble/house/claims/\(Self.compact(Self.held(0)))"
        _ = try await w.next(claim0) { Self.claimHolder($0) == "gw0" }
        _ = try await w.next("ble/gw0/devices/\(Self.compact(Self.held(0)))/link") { $0.text == #"{"state":"connected"}"# }
        try await bed.syncAll("held")

        let cut = ContinuousClock.now
        relay.cut()
        _ = try await w.next("ble/gw0/status") { $0.text == "offline" }
        _ = try await w.next(claim0) { Self.claimHolder($0) == "gw1" }
        // gw1 claimed at once, yet the link is still gw0's.
        #expect(bed.radios[0].connections.contains { $0.peer == Self.held(0) })
        _ = try await w.next("ble/gw1/devices/\(Self.compact(Self.held(0)))/link", timeout: .seconds(15)) { $0.text == #"{"state":"connected"}"# }
        let moved = ContinuousClock.now - cut
        #expect(moved >= .seconds(2) && moved < .seconds(8), "\(moved)")
        #expect(!bed.radios[0].connections.contains { $0.peer == Self.held(0) })

        // Healed: gw0 is back online, and device 0 stays with gw1.
        await w.clear()
        try await relay.heal()
        _ = try await w.next("ble/gw0/status", timeout: .seconds(20)) { $0.text == "online" }
        // The slots of the connection's first message, then the fleet's own, sent after gw0 subscribed.
        _ = try await w.nth(2, on: "ble/house/gateways/gw0/slots")
        try await bed.syncAll("healed")
        let claims = await w.on(claim0).map(\.text)
        #expect(claims.last.map { Self.claimHolder(MQTTMessage(topic: claim0, text: $0)) } ?? "gw1" == "gw1", "\(claims)")
        #expect(!bed.radios[0].connections.contains { $0.peer == Self.held(0) })
        #expect(bed.radios[1].connections.contains { $0.peer == Self.held(0) })
        #expect(try await bed.stop() == [0, 0])
    }

    /// SIGTERM to the holder: it releases its claim before its link ends and before `offline`;
    /// the other gateway claims the device and holds it.
    @Test func aGatewayStoppedCleanlyHandsItsDeviceOverFirst() async throws {
        let link = PeripheralLink()
        let bed = try await FleetBed.start(gateways: 2, config: Self.config) { g, vc in
            [SimulatedPeripheral(address: Self.held(0), advertisingData: [0x02, 0x01, 0x06], rssi: Self.rssi(g, 0),
                                 attServer: GATTServer(database: .heartRateMonitor(), queue: vc.queue), peripheralLink: link)]
        }
        let w = bed.watcher
        let claim = "ble/house/claims/\(Self.compact(Self.held(0)))"
        _ = try await w.next(claim) { Self.claimHolder($0) == "gw0" }
        _ = try await w.next("ble/gw0/devices/\(Self.compact(Self.held(0)))/link") { $0.text == #"{"state":"connected"}"# }
        bed.children[0].signal(SIGTERM)
        #expect(await bed.children[0].waitForExit(timeout: .seconds(10)) == 0)
        _ = try await w.next(claim) { Self.claimHolder($0) == "gw1" }
        _ = try await w.next("ble/gw1/devices/\(Self.compact(Self.held(0)))/link", timeout: Self.linkBound) { $0.text == #"{"state":"connected"}"# }
        // gw0 stopped connecting before its link ended, so it did not take the device back
        // (it advertises again at once): gw1's first attempt made the link.
        #expect(!bed.radios[0].connections.contains { $0.peer == Self.held(0) })
        let attempts = await w.on("ble/gw1/devices/\(Self.compact(Self.held(0)))/link").map(\.text)
        #expect(attempts == [#"{"state":"connected"}"#], "\(attempts)")
        let order = await w.messages.filter { $0.topic == claim || $0.topic == "ble/gw0/status" }.map(\.text)
        let released = order.firstIndex { $0.hasPrefix(#"{"holder":"","#) }
        let offline = order.firstIndex(of: "offline")
        #expect(released != nil && offline != nil && released! < offline!, "\(order)")
        #expect(try await bed.stop(gateways: [1]) == [0])
    }

    /// gw0 hears the device best but its controller fails every connection (0x3E, Connection
    /// Failed to be Established): after three attempts it releases the device and gw1 holds it.
    @Test func aHolderThatCannotReachItsDeviceHandsItOn() async throws {
        let link = PeripheralLink()
        let bed = try await FleetBed.start(gateways: 2, config: Self.config) { g, vc in
            if g == 0 { vc.failConnections(with: .connectionFailedToBeEstablished, count: 100) }
            return [SimulatedPeripheral(address: Self.held(0), advertisingData: [0x02, 0x01, 0x06], rssi: Self.rssi(g, 0),
                                        attServer: GATTServer(database: .heartRateMonitor(), queue: vc.queue), peripheralLink: link)]
        }
        let w = bed.watcher
        let claim = "ble/house/claims/\(Self.compact(Self.held(0)))"
        _ = try await w.next(claim) { Self.claimHolder($0) == "gw0" }
        _ = try await w.next(claim, timeout: .seconds(30)) { $0.text.hasPrefix(#"{"holder":"","#) }
        _ = try await w.next(claim) { Self.claimHolder($0) == "gw1" }
        _ = try await w.next("ble/gw1/devices/\(Self.compact(Self.held(0)))/link", timeout: Self.linkBound) { $0.text == #"{"state":"connected"}"# }
        let errors = await w.on("ble/gw0/devices/\(Self.compact(Self.held(0)))/link").filter { $0.text.hasPrefix(#"{"state":"error","#) }
        #expect(errors.count >= 3, "\(errors.map(\.text))")
        #expect(try await bed.stop() == [0, 0])
    }
}
