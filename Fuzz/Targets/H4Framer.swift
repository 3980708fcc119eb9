import BLETransport
import BLEWire

/// H4 stream framer (Core Spec Vol 4, Part A, 2). The input is the byte stream itself, cut
/// into chunks whose sizes come from a generator seeded by the input. Properties:
/// - the packets emitted, re-encoded as H4, are exactly a prefix of the stream;
/// - when `finish()` accepts the stream, that prefix is the whole stream;
/// - cutting the stream differently (one chunk) gives the same packets and the same outcome;
/// - every emitted packet decodes again with `HCIPacket(h4:)` to itself;
/// - with a raw ACL receiver that takes every ACL packet (`feed(_:acl:_:)`), the bytes it is
///   offered are exactly the ACL packets' header and data, and the other packets are the same.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let stream = Array(UnsafeBufferPointer(start: data, count: size))
    var random = FuzzRandom(seed: Array(stream.prefix(8)) + [UInt8(truncatingIfNeeded: size)])

    let chunked = frame(stream) { random.size(upTo: 300) }
    let whole = frame(stream) { stream.count }

    fuzzCheck(chunked.packets == whole.packets, "chunking changed the packets")
    fuzzCheck(chunked.failed == whole.failed, "chunking changed the failure")
    fuzzCheck(chunked.finished == whole.finished, "chunking changed the end-of-stream result")

    var rawRandom = FuzzRandom(seed: Array(stream.prefix(8)) + [UInt8(truncatingIfNeeded: size)])
    let raw = frame(stream, takeACL: true) { rawRandom.size(upTo: 300) }
    fuzzCheck(raw.failed == whole.failed && raw.finished == whole.finished, "the raw receiver changed the outcome")
    fuzzCheck(raw.packets == whole.packets.filter { if case .acl = $0 { false } else { true } },
              "the raw receiver changed the other packets")
    let aclBodies: [[UInt8]] = whole.packets.compactMap { if case .acl = $0 { Array($0.h4.dropFirst()) } else { nil } }
    fuzzCheck(raw.offered == aclBodies, "the raw receiver was not offered exactly the ACL packets")

    var emitted: [UInt8] = []
    for packet in chunked.packets {
        let h4 = packet.h4
        emitted.append(contentsOf: h4)
        switch Result(catching: { () throws(DecodeError) in try HCIPacket(h4: h4) }) {
        case .success(let again): fuzzCheck(again == packet, "emitted packet does not decode to itself")
        case .failure(let error): fuzzCheck(false, "emitted packet does not decode: \(error)")
        }
    }
    fuzzCheck(emitted.count <= stream.count && Array(stream.prefix(emitted.count)) == emitted,
              "emitted packets are not a prefix of the stream")
    if chunked.finished { fuzzCheck(emitted.count == stream.count, "finish() accepted a stream with bytes left over") }
    return 0
}

private struct FramingRun {
    var packets: [HCIPacket] = []
    var offered: [[UInt8]] = []
    var failed = false
    var finished = false
}

private func frame(_ stream: [UInt8], takeACL: Bool = false, nextSize: () -> Int) -> FramingRun {
    var framer = H4Framer(endpoint: "fuzz")
    var run = FramingRun()
    var at = 0
    stream.withUnsafeBytes { raw in
        while at < raw.count {
            let end = min(raw.count, at + max(1, nextSize()))
            do {
                if takeACL {
                    try framer.feed(UnsafeRawBufferPointer(rebasing: raw[at..<end]), acl: { run.offered.append(Array($0)); return true }) {
                        run.packets.append($0)
                    }
                } else {
                    try framer.feed(UnsafeRawBufferPointer(rebasing: raw[at..<end])) { run.packets.append($0) }
                }
            } catch {
                run.failed = true
                // A failed framer keeps failing.
                do { try framer.feed(UnsafeRawBufferPointer(rebasing: raw[at..<end])) { _ in } } catch { return }
                fuzzCheck(false, "framer accepted bytes after a framing error")
                return
            }
            at = end
        }
    }
    if !run.failed {
        do { try framer.finish(); run.finished = true } catch {}
        fuzzCheck(run.finished == framer.isAtPacketBoundary, "finish() disagrees with isAtPacketBoundary")
    }
    return run
}
