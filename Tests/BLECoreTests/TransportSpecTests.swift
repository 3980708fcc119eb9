import Testing
@testable import BLECore
@testable import BLETransport

@Suite struct TransportSpecTests {
    @Test(arguments: [
        ("hci0", TransportSpec.hciUser(index: 0), "hci0"),
        ("hci12", .hciUser(index: 12), "hci12"),
        ("hci-user:1", .hciUser(index: 1), "hci1"),
        ("hci-raw:0", .hciRaw(index: 0), "hci-raw:0"),
        ("tcp:127.0.0.1:9000", .tcp(host: "127.0.0.1", port: 9000), "tcp:127.0.0.1:9000"),
        ("tcp:localhost:1", .tcp(host: "localhost", port: 1), "tcp:localhost:1"),
        ("tcp:[::1]:65535", .tcp(host: "::1", port: 65535), "tcp:[::1]:65535"),
        ("unix:/tmp/c.sock", .unix(path: "/tmp/c.sock"), "unix:/tmp/c.sock"),
        ("serial:/dev/ttyUSB0", .serial(path: "/dev/ttyUSB0", baud: 115_200, rtscts: false), "serial:/dev/ttyUSB0@115200"),
        ("serial:/dev/ttyUSB0@1000000,rtscts", .serial(path: "/dev/ttyUSB0", baud: 1_000_000, rtscts: true), "serial:/dev/ttyUSB0@1000000,rtscts"),
        ("serial:/dev/ttyAMA0,rtscts", .serial(path: "/dev/ttyAMA0", baud: 115_200, rtscts: true), "serial:/dev/ttyAMA0@115200,rtscts"),
        ("serial:/dev/ttyACM0@4000000", .serial(path: "/dev/ttyACM0", baud: 4_000_000, rtscts: false), "serial:/dev/ttyACM0@4000000"),
        ("pty", .pty, "pty"),
        ("replay:Fixtures/a.btsnoop", .replay(path: "Fixtures/a.btsnoop"), "replay:Fixtures/a.btsnoop"),
    ])
    func validSpecs(text: String, spec: TransportSpec, canonical: String) throws {
        let parsed = try TransportSpec.parse(text)
        #expect(parsed == spec)
        #expect(parsed.description == canonical)
        #expect(try TransportSpec.parse(canonical) == spec)
    }

    @Test(arguments: [
        ("", "empty transport"),
        ("bogus", "unknown transport \"bogus\""),
        ("usb:1", "unknown transport \"usb\""),
        ("hci", "missing adapter index (hci0, hci1, ...)"),
        ("hcix", "adapter index \"x\" is not a number"),
        ("hci-1", "adapter index \"-1\" is not a number"),
        ("hci-user:", "missing adapter index after \"hci-user:\""),
        ("hci-raw:a", "adapter index \"a\" is not a number"),
        ("tcp:[[]:1", "\"[\" and \"]\" only enclose an IPv6 address (tcp:[ADDRESS]:PORT)"),  // found by the TransportSpec fuzz target
        ("tcp:a]:1", "\"[\" and \"]\" only enclose an IPv6 address (tcp:[ADDRESS]:PORT)"),
        ("hci-raw:65535", "adapter index 65535 is out of range 0-65534"),
        ("tcp", "tcp needs an argument after \"tcp:\""),
        ("tcp:localhost", "missing port (tcp:HOST:PORT)"),
        ("tcp:localhost:", "missing port (tcp:HOST:PORT)"),
        ("tcp::9000", "missing host (tcp:HOST:PORT)"),
        ("tcp:localhost:0", "port 0 is out of range 1-65535"),
        ("tcp:localhost:65536", "port 65536 is out of range 1-65535"),
        ("tcp:localhost:http", "port \"http\" is not a number"),
        ("tcp:::1:9000", "an IPv6 address goes in brackets: tcp:[::1]:9000"),
        ("tcp:[::1:9000", "missing \"]\" after the IPv6 address"),
        ("tcp:[::1]", "missing port (tcp:[ADDRESS]:PORT)"),
        ("unix:", "missing socket path after \"unix:\""),
        ("serial:", "missing device path (serial:/dev/ttyUSB0)"),
        ("serial:@115200", "missing device path (serial:/dev/ttyUSB0)"),
        ("serial:/dev/ttyUSB0@fast", "baud rate \"fast\" is not a number"),
        ("serial:/dev/ttyUSB0@", "baud rate \"\" is not a number"),
        ("serial:/dev/ttyUSB0,crtscts", "unknown serial option \"crtscts\" (the only option is rtscts)"),
        ("pty:/dev/pts/3", "pty takes no argument; the slave path is chosen by the kernel and printed on open"),
        ("replay:", "missing capture file after \"replay:\""),
    ])
    func invalidSpecs(text: String, reason: String) {
        let error = #expect(throws: TransportError.self) { try TransportSpec.parse(text) }
        #expect(error == .invalidSpec(text, reason: reason))
    }

    /// U+070F (Syriac Abbreviation Mark) is a prepended mark: it joins the scalar after it into
    /// one Character, so a search by Character does not see a separator behind it. The first
    /// input is the one the TransportSpec fuzz target found ("serial:", EC EC 5B 3A A4 DC 8F:
    /// two invalid bytes, "[:", one invalid byte, U+070F), whose description with "@115200"
    /// appended parsed back with the baud rate inside the path.
    @Test func separatorsAfterAPrependedMarkAreFoundScalarByScalar() throws {
        let found = String(decoding: [0x73, 0x65, 0x72, 0x69, 0x61, 0x6C, 0x3A, 0xEC, 0xEC, 0x5B, 0x3A, 0xA4, 0xDC, 0x8F], as: UTF8.self)
        let spec = try TransportSpec.parse(found)
        #expect(spec == .serial(path: "\u{FFFD}\u{FFFD}[:\u{FFFD}\u{070F}", baud: 115_200, rtscts: false))
        #expect(try TransportSpec.parse(spec.description) == spec)
        #expect(try TransportSpec.parse("serial:/dev/x\u{070F}@9600,rtscts") == .serial(path: "/dev/x\u{070F}", baud: 9600, rtscts: true))
        #expect(try TransportSpec.parse("tcp:h\u{070F}:80") == .tcp(host: "h\u{070F}", port: 80))
        let unknown = #expect(throws: TransportError.self) { try TransportSpec.parse("hci-raw\u{070F}:1") }
        #expect(unknown == .invalidSpec("hci-raw\u{070F}:1", reason: "unknown transport \"hci-raw\u{070F}\""))
    }

    @Test func nonStandardBaudListsTheRates() {
        let error = #expect(throws: TransportError.self) { try TransportSpec.parse("serial:/dev/ttyS0@12345") }
        guard case .invalidSpec(_, let reason) = error else { Issue.record("expected invalidSpec"); return }
        #expect(reason.hasPrefix("baud rate 12345 is not a standard rate (1200, 2400, "))
        #expect(reason.hasSuffix("3500000, 4000000)"))
    }

    @Test func unixPathLongerThanSunPath() {
        let path = "/" + String(repeating: "a", count: 120)
        let error = #expect(throws: TransportError.self) { try TransportSpec.parse("unix:" + path) }
        #expect(error == .invalidSpec("unix:" + path, reason: "socket path is 121 bytes, a unix socket address holds at most 107"))
    }

    @Test func invalidSpecMessageListsTheForms() {
        let error = TransportError.invalidSpec("tcp:x", reason: "missing port (tcp:HOST:PORT)")
        #expect(error.description == "invalid transport \"tcp:x\": missing port (tcp:HOST:PORT); use hci0, hci-user:N, hci-raw:N, tcp:HOST:PORT, unix:PATH, serial:/dev/ttyUSB0[@BAUD][,rtscts], pty or replay:FILE.btsnoop")
    }

    @Test func standardBaudsAllMapToTermiosSpeeds() {
        for baud in TransportSpec.standardBauds { #expect(TransportSpec.speed(forBaud: baud) != nil) }
        #expect(TransportSpec.speed(forBaud: 115_200) == speed_t(B115200))
        #expect(TransportSpec.speed(forBaud: 4_000_000) == speed_t(B4000000))
        #expect(TransportSpec.speed(forBaud: 250_000) == nil)
    }
}

#if canImport(Glibc)
import Glibc
#endif
