/// The gateways of a fleet, as the availability of the fleet's Home Assistant entities: the
/// status topics of this gateway and of every gateway that announced its slots or made a claim,
/// sorted, at most ``maximum`` (the first in that order).
///
/// The set only grows (a gateway's retained slots stay after it stops), so every gateway
/// computes the same list from the same retained messages and a config changes only when a
/// gateway joins (or, at a gateway's start, when the others' retained slots come in).
///
///     var m = FleetMembers(own: t); m.update(others: ["gw2"]); m.shown.topics
struct FleetMembers {
    /// Gateways named at most.
    static let maximum = 64

    let own: FleetTopics
    private(set) var topics: [String]
    /// Raised by one each time `topics` changes.
    private(set) var generation = 0
    private var counted = 0

    init(own: FleetTopics) {
        self.own = own
        topics = [own.status(of: own.gatewayID)]
    }

    /// The list to put in configs, with its generation.
    var shown: (generation: Int, topics: [String]) { (generation, topics) }

    /// The gateways known now besides this one (`others`, a set that only grows).
    mutating func update(others: some Collection<String>) {
        guard others.count != counted else { return }
        counted = others.count
        let next = Array(([own.status(of: own.gatewayID)] + others.map { own.status(of: $0) }).sorted().prefix(Self.maximum))
        if next != topics {
            topics = next
            generation += 1
        }
    }
}
