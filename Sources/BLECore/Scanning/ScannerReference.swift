import BLETransport

/// The scanner as a callback on the adapter queue holds it (a timer, the end of a subscriber's
/// stream, the report reader, the reconciliation task): Sendable, checked to be reached on the
/// queue in debug builds, and weak, so a pending timer does not keep a closed central's
/// scanner alive.
///
///     sub.lostTimer = scheduler.schedule(after: timeout) { [reference] in reference.scanner?.checkLost(id) }
typealias ScannerReference = QueueConfined<WeakScanner>

/// A weak reference to the scanner (the central owns it).
struct WeakScanner {
    weak var scanner: Scanner?
}

extension QueueConfined where Value == WeakScanner {
    /// The scanner, unless its central is gone; read it on the adapter queue only.
    @inline(__always)
    var scanner: Scanner? { value.scanner }
}
