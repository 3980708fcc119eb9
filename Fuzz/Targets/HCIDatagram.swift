@testable import BLETransport
import BLEWire

/// The decoder of packets read from an HCI socket (one datagram per packet, indicator first:
/// `H4Framer.decodeDatagram` and the raw ACL fast path `H4Framer.aclBody(ofDatagram:)` that
/// `HCISocketTransport` uses). Input: one datagram, up to a 64 KiB ACL packet. Properties:
/// - a datagram that does not decode is `.malformedStream`, never a trap;
/// - a decoded packet re-encodes (`h4`) to exactly the datagram;
/// - the fast path offers a body exactly when the full decoder gives an ACL packet, and that
///   body is the datagram after its indicator.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    bytes.withUnsafeBytes { raw in
        let fast = H4Framer.aclBody(ofDatagram: raw).map { Array($0) }
        switch Result(catching: { () throws(TransportError) in try H4Framer.decodeDatagram(raw, endpoint: "fuzz") }) {
        case .failure(let error):
            guard case .malformedStream = error else { fuzzCheck(false, "decodeDatagram threw \(error)"); return }
            fuzzCheck(fast == nil, "the ACL fast path took a datagram the decoder refused")
        case .success(let packet):
            fuzzCheck(packet.h4 == bytes, "\(packet) re-encodes to other bytes")
            if case .acl = packet {
                fuzzCheck(fast == Array(bytes.dropFirst()), "the ACL fast path gives another body than the decoder")
            } else {
                fuzzCheck(fast == nil, "the ACL fast path took a \(packet.type) packet")
            }
        }
    }
    return 0
}
