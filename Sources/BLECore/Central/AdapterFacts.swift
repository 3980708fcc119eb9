import BLETransport

/// What the connections of a central read about their adapter: its state and what the
/// controller said about itself. The central keeps them here (`Central.state` and
/// `Central.controllerInfo` read them from here), confined to the adapter queue, so a
/// connection reads them from its own code or its timers with no claim on the central's
/// isolation.
///
///     let adapter = central?.facts.value.state ?? .poweredOff
struct AdapterFacts {
    var state: AdapterState = .unknown
    var controllerInfo: ControllerInfo?
}
