extension KFrameError: BLEError {
    public var isCancellation: Bool { false }
}
