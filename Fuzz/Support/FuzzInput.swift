#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Shared by every fuzz target: a cursor that splits one libFuzzer input into the values a
/// harness needs (selectors, sizes, byte runs), and the one way a harness reports a broken
/// property. Compiled into each target binary next to its entry file.

/// Reads the fuzzer's bytes front to back; running out yields zeros and empty runs, never a trap.
struct FuzzInput {
    let bytes: [UInt8]
    var offset = 0

    init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        bytes = Array(UnsafeBufferPointer(start: data, count: size))
    }

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func u8() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() -> UInt16 { UInt16(u8()) | UInt16(u8()) << 8 }

    /// Up to `count` bytes (fewer at the end of the input).
    mutating func take(_ count: Int) -> [UInt8] {
        let n = max(0, min(count, remaining))
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    /// Everything not read yet.
    mutating func rest() -> [UInt8] { take(remaining) }
}

/// A small deterministic generator (xorshift64*) seeded from the input, for chunk sizes.
struct FuzzRandom {
    var state: UInt64

    init(seed: [UInt8]) {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15
        for b in seed { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
        state = h == 0 ? 1 : h
    }

    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }

    /// A value in 1...max, biased towards small sizes.
    mutating func size(upTo max: Int) -> Int {
        let r = next()
        let limit = (r & 3) == 0 ? max : Swift.max(1, Swift.min(max, 8))
        return 1 + Int((r >> 8) % UInt64(limit))
    }
}

/// A broken property: the harness prints why and stops, so libFuzzer records the input as a
/// crash. (`-O` drops `preconditionFailure`'s own message, hence the explicit print.)
func fuzzCheck(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        let text = "fuzz property failed: \(message())\n"
        _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        preconditionFailure()
    }
}

/// Runs `work` to its end from the fuzzer's own (non-async) thread. Returns once the task
/// that ran `work` has completed, so what `work` captured is released by then: nothing of one
/// input outlives it (LeakSanitizer checks right after the input).
func blocking(_ work: @escaping @Sendable () async -> Void) {
    let finished = DispatchSemaphore(value: 0)
    let task = Task(operation: work)
    Task {
        await task.value
        finished.signal()
    }
    finished.wait()
}
