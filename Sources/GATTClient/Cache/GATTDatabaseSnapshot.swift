import ATT
import BLEWire

/// What a client knows of one peer's attribute database: the primary services once
/// discovered, and per service its characteristics and per characteristic its descriptors
/// once those were discovered, with the peer's Database Hash (0x2B2A) when it has one.
public struct GATTDatabaseSnapshot: Sendable, Hashable {
    /// The primary services, nil until discovered.
    public internal(set) var services: [GATTService]?
    /// Characteristics by service declaration handle.
    public internal(set) var characteristics: [UInt16: [GATTCharacteristic]] = [:]
    /// Descriptors by characteristic value handle.
    public internal(set) var descriptors: [UInt16: [GATTDescriptor]] = [:]
    /// Included services by service declaration handle.
    public internal(set) var includedServices: [UInt16: [GATTIncludedService]] = [:]
    /// The Database Hash read from the peer, when it has one (Vol 3, Part G, 7.3).
    public internal(set) var databaseHash: [UInt8]?
    /// What Service Changed indications invalidated and is not re-discovered yet: at most
    /// one range, the smallest covering every indicated one, so a burst of indications costs
    /// one re-discovery.
    public internal(set) var staleRanges: [ATTHandleRange] = []

    public init() {}

    /// Forgets everything that overlaps `range` (Vol 3, Part G, 7.1: the client must
    /// re-discover the affected attribute handles) and marks it for re-discovery.
    public mutating func invalidate(_ range: ATTHandleRange) {
        guard services != nil else { return }
        forget(range)
        if let stale = staleRanges.first {
            staleRanges = [ATTHandleRange(start: min(stale.start, range.start), end: max(stale.end, range.end))]
        } else {
            staleRanges = [range]
        }
    }

    /// Inserts services re-discovered in a stale range, in handle order. A service found there
    /// may end past the range: whatever it overlaps is forgotten too, so services never overlap.
    mutating func merge(_ found: [GATTService], rediscovered range: ATTHandleRange) {
        let end = found.map(\.endHandle).max().map { max($0, range.end) } ?? range.end
        forget(ATTHandleRange(start: min(range.start, found.map(\.handle).min() ?? range.start), end: end))
        services = ((services ?? []) + found).sorted { $0.handle < $1.handle }
        staleRanges.removeAll { $0 == range }
    }

    /// Drops the services that overlap `range`, with what was discovered under them.
    private mutating func forget(_ range: ATTHandleRange) {
        var kept: [GATTService] = []
        for s in services ?? [] {
            if s.handle <= range.end && s.endHandle >= range.start {
                for c in characteristics[s.handle] ?? [] { descriptors[c.valueHandle] = nil }
                characteristics[s.handle] = nil
                includedServices[s.handle] = nil
            } else {
                kept.append(s)
            }
        }
        services = kept
    }
}
