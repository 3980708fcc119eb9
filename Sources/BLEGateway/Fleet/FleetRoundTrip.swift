/// How long this gateway's own device messages take to come back from the broker (enqueued
/// here, through the publisher queue and the broker, to their arrival in the fleet state), and
/// from that how long a gateway that does not hear a device best holds a new packet back.
///
/// The estimate is the one TCP keeps for its retransmission timer (RFC 6298, 2.2 and 2.3): the
/// smoothed round trip `srtt` and its variation `rttvar`, with gains 1/8 and 1/4. The hold-back
/// is ``base`` (the skew between two gateways hearing one advertisement) plus `srtt + 4 rttvar`,
/// at most ``maximum``; ``base`` until the first sample.
///
///     var rtt = FleetRoundTrip(); rtt.sample(.milliseconds(30)); let wait = rtt.holdoff
struct FleetRoundTrip {
    /// The hold-back without a round trip: more than the time two gateways' radios and scans
    /// take to deliver one advertisement.
    static let base = Duration.milliseconds(100)
    /// The longest hold-back, however slow the broker: a reading heard only by a farther
    /// gateway is late by at most this much per gateway ranked before it.
    static let maximum = Duration.seconds(5)
    /// Round trips longer than this are counted as this (a message queued while the broker
    /// was away).
    static let longestSample = Duration.seconds(10)

    private(set) var smoothed: Duration?
    private(set) var variation: Duration = .zero
    /// Samples taken.
    private(set) var samples = 0

    /// One round trip measured.
    mutating func sample(_ measured: Duration) {
        let r = min(max(measured, .zero), Self.longestSample)
        samples += 1
        guard let srtt = smoothed else {
            smoothed = r
            variation = r / 2
            return
        }
        let deviation = srtt > r ? srtt - r : r - srtt
        variation = variation * 3 / 4 + deviation / 4
        smoothed = srtt * 7 / 8 + r / 8
    }

    /// How long a gateway ranked second for a device holds a new packet back.
    var holdoff: Duration {
        guard let smoothed else { return Self.base }
        return min(Self.maximum, Self.base + smoothed + variation * 4)
    }
}
