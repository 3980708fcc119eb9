/// `v` with exactly `places` digits after the point, rounded half away from zero: the one
/// fixed-point number format of the tool's lines (no C `printf` formats).
///
///     fixedDecimals(1.5, 2)    // "1.50"
///     fixedDecimals(-0.25, 1)  // "-0.3"
func fixedDecimals(_ v: Double, _ places: Int) -> String {
    guard v.isFinite else { return String(v) }
    let places = min(max(places, 0), 9)
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    let scaled = (abs(v) * scale).rounded()
    // Past 2^63 a Double has no fractional digits left to print.
    guard scaled < 9.2e18 else { return String(v) }
    let units = UInt64(scaled), divisor = UInt64(scale)
    let sign = v < 0 && units > 0 ? "-" : ""
    guard places > 0 else { return sign + String(units) }
    let fraction = String(units % divisor)
    return "\(sign)\(units / divisor).\(String(repeating: "0", count: places - fraction.count))\(fraction)"
}
