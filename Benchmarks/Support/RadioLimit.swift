/// The most SDU bytes per second one LE 2M PHY link can carry for SDUs of one size: the
/// radio's own limit, which for small SDUs is far below 1.4 Mbit/s, since every K-frame is
/// an air packet of its own with fixed costs around it.
///
/// Model (Core Specification 5.4 Vol 6, Part B): each K-frame (at most MPS + 4 octets, within
/// a 251-octet LL payload) is one LL Data PDU, sent back to back in one long connection event,
/// each answered by an empty PDU. On the 2M PHY an octet takes 4 µs; a packet is a 2-octet
/// preamble, 4-octet access address, 2-octet header, the payload and a 3-octet CRC (2.1; no
/// MIC: unencrypted, the faster case); 150 µs (T_IFS, 4.1.1) separate each packet from the
/// next. Per K-frame: its packet, T_IFS, the 11-octet empty packet, T_IFS. For 247-octet
/// K-frames that is 1,392 µs per 247 SDU octets (about 1.42 Mbit/s); for a 20-octet SDU
/// (one 26-octet PDU), 492 µs: 2,033 SDUs/s, 40.7 kB/s.
enum RadioLimit {
    static func sduBytesPerSecond(sduSize: Int, mps: Int) -> Double {
        var microseconds = 0.0
        var offset = 0
        repeat {
            // The first K-frame carries the 2-octet SDU Length (Vol 3, Part A, 3.4.2).
            let header = offset == 0 ? 2 : 0
            let data = min(sduSize - offset, mps - header)
            let pdu = 4 + header + data
            microseconds += Double(2 + 4 + 2 + pdu + 3) * 4 + 150 + Double(2 + 4 + 2 + 3) * 4 + 150
            offset += data
        } while offset < sduSize
        return Double(sduSize) / (microseconds / 1e6)
    }
}
