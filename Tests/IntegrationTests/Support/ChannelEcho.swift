import BLECore

/// Echo transfers written once against `ConnectionOrientedChannel`, run over the host's own
/// channels (Bumble, L2CAPRadioTests) and the kernel's (the VM, KernelTierL2CAPGuestTests).
enum ChannelEcho {
    static func random(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: count)
        var i = 0
        while i < count {
            var word = g.next()
            for _ in 0..<min(8, count - i) {
                bytes[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
        return bytes
    }

    /// Sends `data` in SDUs of `sduSize` while reading the echo; returns what came back.
    static func sdus(_ channel: some ConnectionOrientedChannel, _ data: [UInt8], sduSize: Int,
                     timeout: Duration = .seconds(30)) async throws -> [UInt8] {
        async let sending: Void = {
            var offset = 0
            while offset < data.count {
                let end = min(offset + sduSize, data.count)
                try await channel.send(Array(data[offset..<end]), timeout: timeout)
                offset = end
            }
        }()
        var back: [UInt8] = []
        back.reserveCapacity(data.count)
        while back.count < data.count, let sdu = try await channel.receive(timeout: timeout) { back += sdu }
        try await sending
        return back
    }

    /// Writes `data` through the channel's byte writer (SDUs of the peer's MTU) while reading
    /// the echo through its byte reader in chunks of at most `chunk`; returns what came back.
    static func bytes(_ channel: some ConnectionOrientedChannel, _ data: [UInt8], chunk: Int,
                      timeout: Duration = .seconds(30)) async throws -> [UInt8] {
        async let writing: Void = channel.byteWriter.write(data, timeout: timeout)
        var reader = channel.bytes.makeAsyncIterator()
        var back: [UInt8] = []
        back.reserveCapacity(data.count)
        while back.count < data.count, let piece = try await reader.read(upTo: chunk, timeout: timeout) {
            guard piece.count <= chunk else { throw Oversized(size: piece.count, chunk: chunk) }
            back += piece
        }
        try await writing
        return back
    }

    struct Oversized: Error, CustomStringConvertible {
        let size: Int, chunk: Int
        var description: String { "read(upTo: \(chunk)) returned \(size) bytes" }
    }
}
