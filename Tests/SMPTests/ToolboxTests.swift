import Testing
import BLECore
@testable import SMP
import BLEWire

/// The toolbox functions against the Core Specification's sample data: c1 and s1 from their
/// definitions (Vol 3, Part H, 2.2.3 and 2.2.4), the others from Vol 3, Part H, Appendix D
/// (sample data for f4, f5, f6, g2, h6, h7 and ah).
struct ToolboxTests {
    let u = hex("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
    let v = hex("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    let w = hex("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")
    let n1 = u128("d5cb8454 d177733e ffffb2ec 712baeab")
    let n2 = u128("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf")
    let a1 = LEAddress(BluetoothAddress("56:12:37:37:BF:CE")!, type: .public)
    let a2 = LEAddress(BluetoothAddress("A7:13:70:2D:CF:C1")!, type: .public)

    @Test func f4SampleData() throws {
        #expect(try SMPToolbox.f4(u: u, v: v, x: n1, z: 0) == u128("f2c916f1 07a9bd1c f1eda1be a974872d"))
    }

    @Test func f5SampleData() throws {
        let (macKey, ltk) = try SMPToolbox.f5(w: w, n1: n1, n2: n2, a1: a1, a2: a2)
        #expect(macKey == u128("2965f176 a1084a02 fd3f6a20 ce636e20"))
        #expect(ltk == u128("69867911 69d7cd23 980522b5 94750a38"))
    }

    @Test func f6SampleData() throws {
        let value = try SMPToolbox.f6(w: u128("2965f176 a1084a02 fd3f6a20 ce636e20"), n1: n1, n2: n2,
                                      r: u128("12a3343b b453bb54 08da42d2 0c2d0fc8"), ioCap: [0x01, 0x01, 0x02], a1: a1, a2: a2)
        #expect(value == u128("e3c47398 9cd0e8c5 d26c0b09 da958f61"))
    }

    @Test func g2SampleData() throws {
        #expect(try SMPToolbox.g2(u: u, v: v, x: n1, y: n2) == 0x2F9E_D5BA)
    }

    @Test func h6SampleData() throws {
        #expect(try SMPToolbox.h6(w: u128("ec0234a3 57c8ad05 341010a6 0a397d9b"), keyID: 0x6C65_6272) == u128("2d9ae102 e76dc91c e8d3a9e2 80b16399"))
    }

    @Test func h7SampleData() throws {
        #expect(try SMPToolbox.h7(salt: 0x746D_7031, w: u128("ec0234a3 57c8ad05 341010a6 0a397d9b")) == u128("fb173597 c6a3c0ec d2998c2a 75a57011"))
    }

    @Test func ahSampleData() throws {
        #expect(try SMPToolbox.ah(k: u128("ec0234a3 57c8ad05 341010a6 0a397d9b"), r: 0x708194) == 0x0DFBAA)
    }

    /// 2.2.3: k = 0, r = 5783D521..., Pairing Request 01 01 00 00 10 07 07, Pairing Response
    /// 02 03 00 00 08 00 05, initiator random (iat = 1) A1:A2:A3:A4:A5:A6, responder public B1:...:B6.
    @Test func c1SampleData() throws {
        let value = try SMPToolbox.c1(k: 0, r: u128("5783D52156AD6F0E6388274EC6702EE0"),
                                      preq: [0x01, 0x01, 0x00, 0x00, 0x10, 0x07, 0x07], pres: [0x02, 0x03, 0x00, 0x00, 0x08, 0x00, 0x05],
                                      iat: 1, ia: BluetoothAddress("A1:A2:A3:A4:A5:A6")!, rat: 0, ra: BluetoothAddress("B1:B2:B3:B4:B5:B6")!)
        #expect(value == u128("1e1e3fef878988ead2a74dc5bef13b86"))
    }

    /// 2.2.4: k = 0, r1 = 000F0E0D0C0B0A091122334455667788, r2 = 010203040506070899AABBCCDDEEFF00.
    @Test func s1SampleData() throws {
        let value = try SMPToolbox.s1(k: 0, r1: u128("000F0E0D0C0B0A091122334455667788"), r2: u128("010203040506070899AABBCCDDEEFF00"))
        #expect(value == u128("9a1fe1f0e8b0f49b5b4216ae796da062"))
    }
}
