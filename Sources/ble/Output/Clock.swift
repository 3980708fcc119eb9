import FoundationEssentials
import Glibc

/// Wall-clock timestamps for event and notification lines: "13:45:07.123".
enum Clock {
    static func timestamp(_ date: Date = Date()) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&t, &parts)
        let ms = Int((date.timeIntervalSince1970 - Double(t)) * 1000)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let m = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(m)"
    }
}
