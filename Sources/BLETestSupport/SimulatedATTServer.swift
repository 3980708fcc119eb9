/// The link between a simulated peripheral's ATT server and the central, as the in-process
/// virtual controller (or any other test bed) carries it. Calls happen on the test bed's queue.
public protocol ATTServerLink: AnyObject, Sendable {
    /// Sends one ATT PDU to the central (a response, notification or indication).
    func sendToCentral(_ pdu: [UInt8])
    /// The central's address, for logs.
    var centralDescription: String { get }
}

/// The ATT/GATT side of a simulated peripheral. The test bed calls it for each link event, on
/// its own queue, and the server answers through the link.
///
///     final class MyServer: SimulatedATTServer { func receive(_ pdu: [UInt8], from link: any ATTServerLink) { ... } }
public protocol SimulatedATTServer: AnyObject, Sendable {
    func linkConnected(_ link: any ATTServerLink)
    /// One ATT PDU from the central.
    func receive(_ pdu: [UInt8], from link: any ATTServerLink)
    func linkDisconnected(_ link: any ATTServerLink)
}
