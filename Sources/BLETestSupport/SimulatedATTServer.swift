import GATTServer

/// The ATT/GATT side of a simulated peripheral. The test bed calls it for each link event, on
/// its own queue, and the server answers through the link (`ATTServerLink`, from GATTServer).
///
///     final class MyServer: SimulatedATTServer { func receive(_ pdu: [UInt8], from link: any ATTServerLink) { ... } }
public protocol SimulatedATTServer: AnyObject, Sendable {
    func linkConnected(_ link: any ATTServerLink)
    /// One ATT PDU from the central.
    func receive(_ pdu: [UInt8], from link: any ATTServerLink)
    func linkDisconnected(_ link: any ATTServerLink)
}
