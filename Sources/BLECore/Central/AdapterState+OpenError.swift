#if canImport(Glibc)
import Glibc
#endif
import BLETransport

extension AdapterState {
    /// The state an adapter is in when opening it failed with `error`, for UI code that has no
    /// `Central` (because `Central.open` threw): `.unauthorized` for EPERM and EACCES (no
    /// permission to open the adapter), `.unsupported` without Bluetooth support, otherwise
    /// `.transportLost` for a transport that could not be opened and `.unknown` for the rest.
    ///
    ///     do { central = try await Central.open("hci0") } catch { show(AdapterState(openError: error), "\(error)") }
    public init(openError error: any Error) {
        guard let error = error as? TransportError else {
            self = .unknown
            return
        }
        switch error {
        case .permissionDenied, .serialAccessDenied:
            self = .unauthorized
        case .system(_, _, let err) where err == EPERM || err == EACCES:
            self = .unauthorized
        case .bluetoothUnsupported:
            self = .unsupported
        default:
            self = .transportLost
        }
    }
}
