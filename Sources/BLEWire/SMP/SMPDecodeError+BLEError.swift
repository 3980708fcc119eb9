extension SMPDecodeError: BLEError {
    public var isCancellation: Bool { false }
}
