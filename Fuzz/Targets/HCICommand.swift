import BLEWire

/// HCI command decoders (`HCICommandDecoded`, Vol 4, Part E, 7). Input: opcode (2 bytes,
/// little-endian) then the parameters (at most 255 bytes). Property: a decoded command
/// re-encodes to the same packet, the unused octets of Advertising_Data and
/// Scan_Response_Data (beyond Data_Length) aside: those are written as zeros.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let packet = HCICommandPacket(opcode: HCIOpcode(rawValue: input.u16()), parameters: input.take(255))
    if let decoded = try? HCICommandDecoded(packet) {
        fuzzCheck(decoded.packet == significant(packet), "re-encoding \(decoded) changed the packet \(packet)")
    }
    // The whole-packet decoder agrees on the framing.
    let body = HCIPacket.command(packet).body
    if let again = try? HCIPacket(type: .command, body: body) {
        fuzzCheck(again == .command(packet), "command packet does not decode to itself")
    } else {
        fuzzCheck(false, "command packet body does not decode")
    }
    return 0
}

/// The packet with the octets past Data_Length of LE Set Advertising / Scan Response Data zeroed.
private func significant(_ packet: HCICommandPacket) -> HCICommandPacket {
    guard packet.opcode.rawValue == 0x2008 || packet.opcode.rawValue == 0x2009,
          packet.parameters.count == 32, Int(packet.parameters[0]) <= 31 else { return packet }
    var p = packet
    for i in (1 + Int(p.parameters[0]))..<32 { p.parameters[i] = 0 }
    return p
}
