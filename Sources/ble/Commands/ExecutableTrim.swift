import BLECore
import Dispatch
import Glibc
import BLETransport

/// Takes the pages of the executable that only startup used out of the process. The binary's
/// read-only mappings (code, constants) are file pages: after startup (config, JSON decoding,
/// runtime set-up, the controller's initialisation) most of what was read is never used
/// again, yet stays mapped, and the kernel maps 64 KiB around every page a fault touches.
/// `madvise(MADV_DONTNEED)` unmaps them from this process only: they stay in the page cache,
/// so a page the gateway still runs comes back with a minor fault, never a read from the
/// disk. `BLE_EXECUTABLE_TRIM=pageout` uses MADV_PAGEOUT instead, which drops them from the
/// cache too: the smallest resident figure, but the pages still used are read again from the
/// disk, and on a busy one that held messages up for seconds (docs/packaging.md);
/// `BLE_EXECUTABLE_TRIM=off` leaves the pages alone. A mapping that holds a private copy
/// (relocated data) is never advised: the advice would throw the copy away.
///
///     ExecutableTrim.schedule()
enum ExecutableTrim {
    /// When the trim runs, after the gateway's start: at 3 s a gateway has started (under 1 s
    /// on a fifth of a core, docs/packaging.md); at 10 s again, for a start that a busy machine
    /// stretched past 3 s (links still connecting), whose later pages the first trim missed.
    static let delays: [Int] = [3, 10]

    /// Runs `unmapReadOnlyPages` at each of `delays` seconds from now, on a utility thread
    /// (never the adapter's executor).
    static func schedule() {
        for delay in delays {
            DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .seconds(delay)) { unmapReadOnlyPages() }
        }
    }

    /// MADV_PAGEOUT (Linux 5.4, <asm-generic/mman-common.h>); older kernels answer EINVAL.
    static let madvPageOut: Int32 = 21

    /// The advice `BLE_EXECUTABLE_TRIM` asks for: unset MADV_DONTNEED, `pageout`
    /// MADV_PAGEOUT, `off` none.
    static var advice: Int32? {
        switch getenv("BLE_EXECUTABLE_TRIM").map({ String(cString: $0) }) {
        case "off": nil
        case "pageout": madvPageOut
        default: MADV_DONTNEED
        }
    }

    /// Advises every read-only mapping of /proc/self/exe that holds no private (anonymous)
    /// page; returns the bytes advised (0 when /proc is not there or the kernel refused).
    @discardableResult
    static func unmapReadOnlyPages() -> Int {
        guard let advice else { return 0 }
        var path = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &path, path.count - 1)
        guard n > 0, let smaps = try? FileBytes.read("/proc/self/smaps", atMost: 4 << 20) else { return 0 }
        let executable = String(decoding: path[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var candidates: [(start: UInt, end: UInt)] = []
        var current: (start: UInt, end: UInt)?
        for line in smaps.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.last == UInt8(ascii: ":") {
                // "Anonymous: N kB": a private copy (relocated data) that the advice would lose.
                if let mapping = current, String(decoding: first, as: UTF8.self) == "Anonymous:" {
                    if fields.count > 1, fields[1].elementsEqual("0".utf8) { candidates.append(mapping) }
                    current = nil
                }
                continue
            }
            // start-end perms offset dev inode path
            current = nil
            guard fields.count == 6, fields[1].count >= 2, fields[1][fields[1].startIndex + 1] != UInt8(ascii: "w"),
                  String(decoding: fields[5].drop { $0 == UInt8(ascii: " ") }, as: UTF8.self) == executable else { continue }
            let range = fields[0].split(separator: UInt8(ascii: "-"))
            guard range.count == 2,
                  let start = UInt(String(decoding: range[0], as: UTF8.self), radix: 16),
                  let end = UInt(String(decoding: range[1], as: UTF8.self), radix: 16), end > start else { continue }
            current = (start, end)
        }
        var advised = 0
        for mapping in candidates {
            guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            if madvise(address, Int(mapping.end - mapping.start), advice) == 0 { advised += Int(mapping.end - mapping.start) }
        }
        return advised
    }
}
