import BLEWire

/// btsnoop reader (datalink 1002 H4 and 2001 Linux monitor). Input: one selector byte,
/// then the file; the selector prepends a valid H4 or monitor header to reach the record
/// parser quickly, or leaves the bytes as they are. Properties:
/// - a header-less, damaged or truncated file is a typed error or a `trailingError`, never a trap;
/// - for H4 captures, the decoded records written again with `BTSnoopEncoder` read back
///   to the same records with no error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.u8()
    var file: [UInt8]
    switch selector % 3 {
    case 0: file = BTSnoopEncoder.header
    case 1: file = BTSnoopEncoder.header; file[15] = 0xD1; file[14] = 0x07   // datalink 2001
    default: file = []
    }
    file.append(contentsOf: input.rest())

    guard let capture = try? BTSnoopReader(bytes: file) else { return 0 }
    var last = 0
    for u in capture.undecodable {
        fuzzCheck(u.index > last, "undecodable records out of order or without a record number")
        last = u.index
    }
    guard capture.datalink == .h4 else { return 0 }

    var again = BTSnoopEncoder.header
    for record in capture.records { BTSnoopEncoder.append(record, to: &again) }
    switch Result(catching: { () throws(DecodeError) in try BTSnoopReader(bytes: again) }) {
    case .success(let reread):
        fuzzCheck(reread.records == capture.records && reread.undecodable.isEmpty && reread.trailingError == nil,
                  "records written again read back differently")
    case .failure(let error):
        fuzzCheck(false, "re-encoded capture does not read: \(error)")
    }
    return 0
}
