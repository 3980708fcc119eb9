/// The gateways of a fleet, as the availability of the fleet's Home Assistant entities: the
/// status topics of this gateway and of every gateway that announced its slots or made a claim,
/// sorted, at most ``maximum`` (the first in that order).
///
/// The set only grows (a gateway's retained slots stay after it stops), so every gateway
/// computes the same list from the same retained messages and a config changes only when a
/// gateway joins. ``shown`` is nil until this gateway's own slots message came back from the
/// broker: the broker sends the retained slots of the others on subscribing, before that echo,
/// so the first list shown is already the whole fleet.
///
///     var m = FleetMembers(); m.update(own: t, others: ["gw2"], ownSlotsCameBack: true); m.shown?.topics
struct FleetMembers {
    /// Gateways named at most.
    static let maximum = 64

    private(set) var topics: [String] = []
    /// Raised by one each time `topics` changes.
    private(set) var generation = 0
    private var counted = -1
    private var settled = false

    /// The list to put in configs, with its generation; nil while the retained slots are
    /// still coming in.
    var shown: (generation: Int, topics: [String])? { settled ? (generation, topics) : nil }

    /// The gateways known now besides this one (`others`, a set that only grows);
    /// `ownSlotsCameBack`: the message being handled is this gateway's own slots.
    mutating func update(own: FleetTopics, others: some Collection<String>, ownSlotsCameBack: Bool) {
        if ownSlotsCameBack { settled = true }
        guard others.count != counted else { return }
        counted = others.count
        let next = Array(([own.status(of: own.gatewayID)] + others.map { own.status(of: $0) }).sorted().prefix(Self.maximum))
        if next != topics {
            topics = next
            generation += 1
        }
    }
}
