import Testing
import BLETestSupport
import GATTServer
import BLEWire

/// Reads and writes, byte for byte (Vol 3, Part F, 3.4.4-3.4.6), with every error path.
struct ReadWritePDUTests {
    @Test func read() {
        let bed = ServerBed()
        #expect(bed.request("0A 0900") == hex("0B 64"))
        // Presentation Format: uint8 (0x04), exponent 0, percentage (0x27AD), Bluetooth SIG, 0.
        #expect(bed.request("0A 0B00") == hex("0B 04 00 AD27 01 0000"))
        #expect(bed.request("0A 0000") == hex("01 0A 0000 01"))
        #expect(bed.request("0A 1300") == hex("01 0A 1300 01"))
    }

    /// 3.2.5 / Vol 3, Part C, 10.3: a read refused for security says what the client must do.
    @Test func readNeedsSecurity() {
        let bed = ServerBed()
        #expect(bed.request("0A 1000") == hex("01 0A 1000 0F"))
        #expect(bed.request("0A 1200") == hex("01 0A 1200 05"))
        bed.link.isEncrypted = true
        #expect(bed.request("0A 1000") == hex("0B 6B6579"))
        #expect(bed.request("0A 1200") == hex("01 0A 1200 05"))
        bed.link.isAuthenticated = true
        #expect(bed.request("0A 1200") == hex("0B 70696E"))
    }

    @Test func readBlob() {
        let bed = ServerBed()
        #expect(bed.request("0C 0E00 0100") == hex("0D 6263"))
        #expect(bed.request("0C 0E00 0300") == hex("0D"))
        #expect(bed.request("0C 0E00 0400") == hex("01 0C 0E00 07"))
    }

    /// 3.4.4.7/3.4.4.8 and 3.4.4.11/3.4.4.12.
    @Test func readMultipleAndMultipleVariable() {
        let bed = ServerBed()
        #expect(bed.request("0E 0900 0E00") == hex("0F 64 616263"))
        #expect(bed.request("20 0900 0E00") == hex("21 0100 64 0300 616263"))
        #expect(bed.request("0E 0900 1000") == hex("01 0E 1000 0F"))
        #expect(bed.request("20 0900 5000") == hex("01 20 5000 01"))
        // A set of one handle is not a Read Multiple Request.
        #expect(bed.request("0E 0900") == hex("01 0E 0000 04"))
    }

    @Test func writeRequest() {
        let bed = ServerBed()
        #expect(bed.request("12 0E00 78797A") == hex("13"))
        #expect(bed.request("0A 0E00") == hex("0B 78797A"))
        // Read-only, not a handle, too long for the characteristic (20 octets).
        #expect(bed.request("12 0900 01") == hex("01 12 0900 03"))
        #expect(bed.request("12 5000 01") == hex("01 12 5000 01"))
        #expect(bed.request("12 0E00" + String(repeating: "AA", count: 20)) == hex("13"))
        bed.send("02 4000")
        #expect(bed.request("12 0E00" + String(repeating: "AA", count: 21)) == hex("01 12 0E00 0D"))
    }

    /// A Write Command gets no answer, applied or not.
    @Test func writeCommand() {
        let bed = ServerBed()
        #expect(bed.send("52 0E00 3132").isEmpty)
        #expect(bed.request("0A 0E00") == hex("0B 3132"))
        #expect(bed.send("52 0900 01").isEmpty)
        #expect(bed.request("0A 0900") == hex("0B 64"))
    }

    /// 3.4.6.1-3.4.6.4: parts are queued, echoed, then written together.
    @Test func preparedWrites() {
        let bed = ServerBed()
        #expect(bed.request("16 0E00 0000 3031") == hex("17 0E00 0000 3031"))
        #expect(bed.request("16 0E00 0200 3233") == hex("17 0E00 0200 3233"))
        #expect(bed.request("0A 0E00") == hex("0B 616263"))
        #expect(bed.request("18 01") == hex("19"))
        #expect(bed.request("0A 0E00") == hex("0B 30313233"))
        // Cancelled: nothing is written.
        #expect(bed.request("16 0E00 0000 5A") == hex("17 0E00 0000 5A"))
        #expect(bed.request("18 00") == hex("19"))
        #expect(bed.request("0A 0E00") == hex("0B 30313233"))
    }

    @Test func preparedWriteErrors() {
        let bed = ServerBed(prepareQueueLimit: 2)
        #expect(bed.request("16 0900 0000 01") == hex("01 16 0900 03"))
        #expect(bed.request("16 5000 0000 01") == hex("01 16 5000 01"))
        #expect(bed.request("16 0E00 0000 01") == hex("17 0E00 0000 01"))
        #expect(bed.request("16 0E00 0100 02") == hex("17 0E00 0100 02"))
        // The queue is full at 2 (Prepare Queue Full, 0x09).
        #expect(bed.request("16 0E00 0200 03") == hex("01 16 0E00 09"))
        #expect(bed.request("18 00") == hex("19"))
        // An offset past the value: Invalid Offset (0x07) at Execute Write.
        #expect(bed.request("16 0E00 0900 01") == hex("17 0E00 0900 01"))
        #expect(bed.request("18 01") == hex("01 18 0E00 07"))
        // Assembled longer than 20 octets: Invalid Attribute Value Length (0x0D).
        #expect(bed.request("16 0E00 0000" + String(repeating: "BB", count: 18)) != nil)
        #expect(bed.request("16 0E00 1200 BBBBBB") != nil)
        #expect(bed.request("18 01") == hex("01 18 0E00 0D"))
        #expect(bed.request("0A 0E00") == hex("0B 616263"))
    }

    /// The prepare queue holds at most `prepareQueueBytes` value octets per link.
    @Test func preparedBytesAreBounded() {
        let bed = ServerBed(GATTDatabase(services: ServerBed.database.services), prepareQueueBytes: 20)
        #expect(bed.request("16 0E00 0000" + String(repeating: "11", count: 18)) != nil)
        #expect(bed.request("16 0E00 1200 2222") == hex("17 0E00 1200 2222"))
        #expect(bed.request("16 0E00 1400 33") == hex("01 16 0E00 09"))
        #expect(bed.request("18 00") == hex("19"))
        #expect(bed.request("16 0E00 0000 44") == hex("17 0E00 0000 44"))
    }

    /// A key shorter than 16 octets is refused for a `fullKeySize` attribute: Encryption Key
    /// Size Too Short (0x0C); no encryption at all: Insufficient Encryption (0x0F).
    @Test func keySize() {
        let db = GATTDatabase(services: [
            .init(uuid: BluetoothUUID(uuid16: 0xFFF0), characteristics: [
                .init(uuid: BluetoothUUID(uuid16: 0xFFF1), properties: [.read], permissions: [.read, .fullKeySize], value: [0x01]),
            ]),
        ], includesGATTService: false)
        let bed = ServerBed(db)
        #expect(bed.request("0A 0300") == hex("01 0A 0300 0F"))
        bed.link.isEncrypted = true
        bed.link.encryptionKeySize = 7
        #expect(bed.request("0A 0300") == hex("01 0A 0300 0C"))
        bed.link.encryptionKeySize = 16
        #expect(bed.request("0A 0300") == hex("0B 01"))
    }

    /// The CCCD (Vol 3, Part G, 3.3.3.3) is per client; bits the characteristic does not
    /// support are refused with CCCD Improperly Configured (0xFD).
    @Test func clientCharacteristicConfiguration() {
        let bed = ServerBed()
        let other = CaptureLink("C0:00:00:00:00:02")
        bed.connect(other)
        #expect(bed.request("0A 0A00") == hex("0B 0000"))
        #expect(bed.request("12 0A00 0100") == hex("13"))
        #expect(bed.request("0A 0A00") == hex("0B 0100"))
        #expect(bed.request("0A 0A00", on: other) == hex("0B 0000"))
        #expect(bed.request("12 0A00 0200") == hex("01 12 0A00 FD"))
        #expect(bed.request("12 0A00 01") == hex("01 12 0A00 0D"))
    }

    /// Malformed, unknown and oversized PDUs (3.3, 3.4.1.1).
    @Test func badInput() {
        let bed = ServerBed()
        // Truncated Read Request: Invalid PDU (0x04).
        #expect(bed.request("0A 09") == hex("01 0A 0000 04"))
        // An unknown request: Request Not Supported (0x06); an unknown command: no answer.
        #expect(bed.request("3F 0100") == hex("01 3F 0000 06"))
        #expect(bed.send("7F 0100").isEmpty)
        // Longer than ATT_MTU (23): Invalid PDU.
        #expect(bed.request("12 0E00" + String(repeating: "AA", count: 21)) == hex("01 12 0000 04"))
        // A response or a notification from the client gets nothing.
        #expect(bed.send("0B 01").isEmpty)
        #expect(bed.send("1B 0900 01").isEmpty)
        #expect(bed.send("").isEmpty)
        #expect(bed.request("0A 0900") == hex("0B 64"))
    }
}
