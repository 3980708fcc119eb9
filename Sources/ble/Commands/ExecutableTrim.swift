import BLECore
import Glibc
import BLETransport

/// Gives back the pages of the executable that only startup used. The binary's read-only
/// mappings (code, constants, relocations) are clean file pages: after startup (config,
/// JSON decoding, runtime set-up, the controller's initialisation) most of what was read is
/// never used again, yet stays resident, and the kernel maps 64 KiB around every page a
/// fault touches. `madvise(MADV_PAGEOUT)` drops them from this process; what the gateway
/// still runs comes back from the file on its next use. Measured on the idle gateway
/// (docs/packaging.md): the executable's resident pages go from about 11 MiB to 4-5 MiB.
///
///     ExecutableTrim.pageOutReadOnlyMappings()
enum ExecutableTrim {
    /// MADV_PAGEOUT (Linux 5.4, <asm-generic/mman-common.h>); older kernels answer EINVAL and
    /// nothing changes.
    static let madvPageOut: Int32 = 21

    /// Advises every read-only mapping of /proc/self/exe; returns the bytes advised (0 when
    /// /proc is not there or the kernel refused).
    @discardableResult
    static func pageOutReadOnlyMappings() -> Int {
        var path = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &path, path.count - 1)
        guard n > 0, let maps = try? FileBytes.read("/proc/self/maps", atMost: 1 << 20) else { return 0 }
        let executable = String(decoding: path[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var advised = 0
        for line in maps.split(separator: UInt8(ascii: "\n")) {
            // start-end perms offset dev inode path
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, fields[1].count >= 2, fields[1][fields[1].startIndex + 1] != UInt8(ascii: "w"),
                  String(decoding: fields[5].drop { $0 == UInt8(ascii: " ") }, as: UTF8.self) == executable else { continue }
            let range = fields[0].split(separator: UInt8(ascii: "-"))
            guard range.count == 2,
                  let start = UInt(String(decoding: range[0], as: UTF8.self), radix: 16),
                  let end = UInt(String(decoding: range[1], as: UTF8.self), radix: 16), end > start,
                  let address = UnsafeMutableRawPointer(bitPattern: start) else { continue }
            if madvise(address, Int(end - start), madvPageOut) == 0 { advised += Int(end - start) }
        }
        return advised
    }
}
