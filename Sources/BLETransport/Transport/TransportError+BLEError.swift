import BLEWire

extension TransportError: BLEError {
    public var isCancellation: Bool { false }
}
