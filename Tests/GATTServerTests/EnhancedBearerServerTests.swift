import Testing
import BLETestSupport
import GATTServer
import BLEWire

/// Enhanced ATT bearers of one client (Vol 3, Part G, 5.3.2), byte for byte: each answers its
/// own requests (by its own ATT_MTU: `PeripheralGATTRadioTests` with Bumble), Exchange MTU is not used on them (Part F, 3.4.2.1), and the
/// CCCD a client writes on one is the client's, read back on every bearer and followed by the
/// notifications on its unenhanced bearer (Part G, 3.3.3.3). Handles as in `ServerBed`:
/// Battery Level value 0x0009, its CCCD 0x000A.
struct EnhancedBearerServerTests {
    @Test func anEnhancedBearerSharesTheClientsCCCDs() async {
        let bed = ServerBed()
        let enhanced = CaptureLink()
        bed.queue.sync { bed.server.connectEnhanced(enhanced, client: bed.link, mtu: 24) }
        // Exchange MTU on the enhanced bearer: Request Not Supported (0x06).
        #expect(bed.request("02 0002", on: enhanced) == hex("01 02 0000 06"))
        // The CCCD written on the enhanced bearer is the client's: read back on both.
        #expect(bed.request("12 0A00 0100", on: enhanced) == hex("13"))
        #expect(bed.request("0A 0A00") == hex("0B 0100"))
        #expect(bed.request("0A 0A00", on: enhanced) == hex("0B 0100"))
        // The notification goes once, on the unenhanced bearer.
        #expect(await bed.server.notify(characteristic: BluetoothUUID(uuid16: 0x2A19), value: [0x33]) == 1)
        #expect(bed.link.drain() == [hex("1B 0900 33")])
        #expect(enhanced.drain().isEmpty)
        // The enhanced bearer reads the stored value as well.
        #expect(bed.request("0A 0900", on: enhanced) == hex("0B 33"))
        bed.disconnect(enhanced)
        #expect(await bed.server.clientConfigurations(of: BluetoothUUID(uuid16: 0x2A19)) == [0x0001])
    }

    /// Server Supported Features (Part G, 7.4): bit 0, EATT supported, after Service Changed
    /// (0x0002-0x0004) and Database Hash (0x0005-0x0006): declaration 0x0007, value 0x0008.
    /// Read By Type Response (Part F, 3.4.4.2): 0x09, length 3, handle, value.
    @Test func serverSupportedFeaturesSaysEATT() {
        let bed = ServerBed(GATTDatabase(services: [], serverFeatures: [.enhancedATTBearer]))
        #expect(bed.request("08 0100 FFFF 3A2B") == hex("09 03 0800 01"))
        #expect(bed.request("0A 0700") == hex("0B 02 0800 3A2B"))
    }
}
