import BLECore
import Testing
import BLEWire

/// LinkError carries the peer as an address and the handle as a number; its text names both.
@Suite struct LinkErrorTests {
    static let peer = BluetoothAddress("F0:F1:F2:F3:F4:F5")!

    @Test func fieldsAreTypedAndTextsNameThem() {
        let cancelled = LinkError.cancelled(peer: Self.peer, handle: 0x0040, channelID: 0x0004)
        guard case .cancelled(let peer, let handle, let cid) = cancelled else { Issue.record(); return }
        #expect(peer == Self.peer && handle == 0x0040 && cid == 0x0004)
        #expect(cancelled.description.contains("channel 0x0004 of handle 0x0040 to F0:F1:F2:F3:F4:F5"))
        #expect(LinkError.closed(peer: nil, handle: 0x0040).description.contains("handle 0x0040"))
        #expect(LinkError.closed(peer: Self.peer, handle: nil).description.contains("F0:F1:F2:F3:F4:F5 was closed by this host"))
        #expect(LinkError.disconnected(peer: Self.peer, reason: .connectionTimeout).description.hasPrefix("F0:F1:F2:F3:F4:F5 disconnected"))
    }
}
