import BLECore
import BLEWire

/// In a fleet a configured device is held by one gateway at a time: this one connects to the
/// devices whose claim it holds (FleetClaims) and lets go of those it lost.
extension Gateway {
    /// Whether this gateway keeps a link to `device`: always on its own, in a fleet while it
    /// holds the device's claim.
    func holds(_ device: GatewayConfig.Device) -> Bool {
        fleet == nil || fleetHeld.contains(device.address.address)
    }

    /// Starts and ends the configured links as the held devices change, until cancelled.
    func followClaims(_ fleet: FleetState) async {
        for await held in fleet.heldChanges {
            fleetHeld = held
            for (address, task) in deviceTasks where !held.contains(address.address) {
                task.cancel()
                deviceTasks[address] = nil
                central.options.logger.log(.notice, "gateway \(topics.gatewayID): no longer holds \(address) (fleet claim)")
            }
            for device in config.devices where held.contains(device.address.address) && deviceTasks[device.address] == nil {
                central.options.logger.log(.notice, "gateway \(topics.gatewayID): holds \(device.address) (fleet claim)")
                startDevice(device)
            }
        }
    }
}

extension FleetState {
    /// The configured devices changed (a reload): only these are claimed from now on.
    func want(_ wanted: Set<BluetoothAddress>) async {
        claims.wanted = wanted
        await pin(wanted)
        await settleClaims()
    }
}
