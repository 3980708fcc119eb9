import Foundation

/// A process's resident memory from /proc/PID/status (VmRSS, VmHWM, Threads), and what it is made of
/// from /proc/PID/smaps: resident KiB per kind of mapping (the executable, shared libraries,
/// the heap and anonymous memory, thread stacks, the rest).
struct ProcessMemory {
    var residentMiB = Double.nan
    var peakResidentMiB = Double.nan
    /// Threads of the process (/proc/PID/status Threads).
    var threads = Double.nan
    /// Resident KiB by kind: "executable", "libraries", "heap+anonymous", "stacks", "other".
    var residentKiBByKind: [String: Double] = [:]

    init(pid: pid_t, executable: String? = nil) {
        if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) {
            for line in status.split(separator: "\n") {
                let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard f.count >= 2, let kib = Double(f[1]) else { continue }
                if f[0] == "VmRSS:" { residentMiB = kib / 1024 }
                if f[0] == "VmHWM:" { peakResidentMiB = kib / 1024 }
                if f[0] == "Threads:" { threads = kib }
            }
        }
        guard let smaps = try? String(contentsOfFile: "/proc/\(pid)/smaps", encoding: .utf8) else { return }
        var kind = "other"
        for line in smaps.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = f.first, first.contains("-"), f.count >= 5 {
                // A mapping's header: address range, perms, offset, device, inode[, path].
                let path = f.count >= 6 ? String(f[5]) : ""
                if path == "[heap]" || path.isEmpty { kind = "heap+anonymous" }
                else if path.hasPrefix("[stack") { kind = "stacks" }
                else if let executable, path == executable { kind = "executable" }
                else if path.contains(".so") { kind = "libraries" }
                else if path.hasPrefix("/") { kind = executable == nil ? "executable" : "other" }
                else { kind = "other" }
            } else if f.count >= 2, f[0] == "Rss:", let kib = Double(f[1]) {
                residentKiBByKind[kind, default: 0] += kib
            }
        }
    }
}
