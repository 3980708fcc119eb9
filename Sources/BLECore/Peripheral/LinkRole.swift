/// Our role on an LE link (Role parameter of LE Connection Complete, Vol 4, Part E, 7.7.65.1).
///
///     if link.role == .peripheral { print("a central connected to us") }
public enum LinkRole: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// We initiated the link (`Central.connect`).
    case central = 0x00
    /// A remote central connected to one of our advertising sets.
    case peripheral = 0x01

    public var description: String { self == .central ? "central" : "peripheral" }
}
