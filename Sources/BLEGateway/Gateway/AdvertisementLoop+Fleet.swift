import BLECore
import BLESensors
import BLEWire

extension AdvertisementLoop {
    /// A report in a fleet: presence hears it; the fleet's device topic gets it when the fleet
    /// has not published this packet of the device within the publish interval (held back
    /// briefly where another gateway hears the device better: FleetState+Holdoff.swift).
    func publishToFleet(_ p: DiscoveredPeripheral, _ fleet: FleetState, decoder: inout SensorDecoder,
                        announced: inout [LEAddress: Set<String>], shown: inout [LEAddress: Int]) async {
        await fleet.heard(p.address.address, rssi: p.rssi)
        let packet = FleetDeviceView.packet(data: p.advertisingData.bytes, connectable: p.isConnectable, txPower: p.txPower)
        let decision = await fleet.decide(p.address.address, packet: packet)
        if decision == .skip { return }
        var decoding = decoder.decode(SensorAdvertisement(address: p.address, data: p.advertisingData))
        // The fleet (or this gateway) published this packet already: a button press is reported once.
        if decision == .periodic || decoding.isRepeat { decoding.removeEvents() }
        // Home Assistant: every gateway of the fleet as availability; all of a device's configs
        // again when a gateway joined.
        if discovery {
            let members = await fleet.members.shown
            if shown[p.address] != members.generation {
                if shown[p.address] == nil && shown.count >= 10_000 { shown.removeAll(keepingCapacity: true) }
                shown[p.address] = members.generation
                announced[p.address] = nil
            }
            await announce(p, decoding, &announced, availability: members.topics)
        }
        var messages: [MQTTMessage] = []
        if layout != .openmqttgateway {
            let message = FleetState.deviceMessage(AdvertisementPayload.present(p, decoding: decoding), gateway: fleet.topics.gatewayID, packet: packet)
            messages.append(MQTTMessage(topic: fleet.topics.device(p.address.address), payload: message.bytes))
        }
        if layout != .native {
            messages.append(MQTTMessage(topic: topics.openMQTTGateway(p.address.address),
                                        payload: AdvertisementPayload.openMQTTGateway(p, decoding: decoding).bytes))
        }
        // The gateway that hears the device best publishes; the others only if it did not.
        await fleet.publish(p.address.address, packet: packet, messages)
    }
}
