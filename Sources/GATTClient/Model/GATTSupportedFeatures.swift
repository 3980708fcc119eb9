/// Server Supported Features (0x2B3A), octet 0 (Core Spec 5.4 Vol 3, Part G, 7.4, Table 7.11).
///
///     if features.contains(.enhancedATTBearer) { ... }
public struct GATTServerFeatures: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bit 0: the server serves ATT on enhanced bearers (EATT).
    public static let enhancedATTBearer = GATTServerFeatures(rawValue: 0x01)
}

/// Client Supported Features (0x2B29), octet 0 (Core Spec 5.4 Vol 3, Part G, 7.2, Table 7.6).
///
///     let ours: GATTClientFeatures = [.enhancedATTBearer, .multipleHandleValueNotifications]
public struct GATTClientFeatures: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bit 0: Robust Caching (the client handles Database Out Of Sync).
    public static let robustCaching = GATTClientFeatures(rawValue: 0x01)
    /// Bit 1: the client uses enhanced ATT bearers.
    public static let enhancedATTBearer = GATTClientFeatures(rawValue: 0x02)
    /// Bit 2: the client takes Multiple Handle Value Notifications (Vol 3, Part F, 3.4.7.4).
    public static let multipleHandleValueNotifications = GATTClientFeatures(rawValue: 0x04)
}
