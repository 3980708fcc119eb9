import Dispatch
import Foundation

/// Process figures over one stretch of work: CPU time (getrusage, every thread), wall time,
/// and the growth of the resident set's high-water mark (/proc/self/status VmHWM, reset
/// through /proc/self/clear_refs at the start; Linux 4.0 and later). The heap is trimmed
/// first (glibc `malloc_trim`), so memory freed by earlier work is given back and new
/// growth shows in the resident set instead of reusing it unseen.
final class Meter {
    private var cpuStart = 0.0, wallStart: UInt64 = 0, base = 0
    private(set) var cpuSeconds = 0.0, wallSeconds = 0.0
    /// Peak resident bytes above the start, at the end and when `sampleTenth()` was called.
    private(set) var peakGrowth = 0, peakGrowthAtTenth = 0
    /// Resident bytes above the start once the work is over and the heap trimmed again.
    private(set) var retainedGrowth = 0

    func start() {
        Self.trimHeap()
        Self.resetPeak()
        base = residentBytes()
        cpuStart = DenseWorkload.cpuSeconds()
        wallStart = DispatchTime.now().uptimeNanoseconds
    }

    /// Takes the peak so far: with bounded memory the peak after a tenth of the work is the
    /// peak of the whole.
    func sampleTenth() { peakGrowthAtTenth = Self.peak() - base }

    func stop() {
        cpuSeconds = DenseWorkload.cpuSeconds() - cpuStart
        wallSeconds = Double(DispatchTime.now().uptimeNanoseconds - wallStart) / 1e9
        peakGrowth = Self.peak() - base
        Self.trimHeap()
        retainedGrowth = residentBytes() - base
    }

    /// VmHWM in bytes.
    static func peak() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kB = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return 0 }
        return kB * 1024
    }

    /// Writing 5 to clear_refs sets VmHWM to the current resident set (proc(5)).
    static func resetPeak() {
        let fd = open("/proc/self/clear_refs", O_WRONLY)
        guard fd >= 0 else { return }
        _ = write(fd, "5", 1)
        close(fd)
    }

    /// glibc's `malloc_trim(0)`, looked up at run time (malloc.h is not in the Glibc module).
    static func trimHeap() {
        guard let symbol = dlsym(nil, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
    }
}
