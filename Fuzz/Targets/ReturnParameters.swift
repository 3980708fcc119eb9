import BLEWire

/// Command Complete return parameters (`HCIReturn.decode`, Vol 4, Part E, 7.3 to 7.8).
/// Input: one selector byte picking the return type, then the return parameters.
/// Properties: a non-zero Status always gives `.failure` with that status; a success
/// consumed the whole input (the decoder requires the exact table).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.u8()
    let parameters = input.rest()
    switch selector % 12 {
    case 0: check(HCIReturn.ReadLocalVersionInformation.self, parameters, size: 8)
    case 1: check(HCIReturn.ReadBDADDR.self, parameters, size: 6)
    case 2: check(HCIReturn.ReadBufferSize.self, parameters, size: 7)
    case 3: check(HCIReturn.LEReadBufferSize.self, parameters, size: 3)
    case 4: check(HCIReturn.LEReadBufferSizeV2.self, parameters, size: 6)
    case 5: check(HCIReturn.ReadLocalSupportedCommands.self, parameters, size: 64)
    case 6: check(HCIReturn.ReadLocalSupportedFeatures.self, parameters, size: 8)
    case 7: check(HCIReturn.LEReadLocalSupportedFeatures.self, parameters, size: 8)
    case 8: check(HCIReturn.ReadRSSI.self, parameters, size: 3)
    case 9: check(HCIReturn.LEReadPHY.self, parameters, size: 4)
    case 10: check(HCIReturn.LEReadSuggestedDefaultDataLength.self, parameters, size: 4)
    default:
        // Every type over the same bytes.
        check(HCIReturn.ReadLocalVersionInformation.self, parameters, size: 8)
        check(HCIReturn.ReadLocalSupportedCommands.self, parameters, size: 64)
        check(HCIReturn.ReadRSSI.self, parameters, size: 3)
    }
    return 0
}

/// `size`: the octets after Status in the command's return parameter table.
private func check<R: HCIReturnParameters>(_ type: R.Type, _ parameters: [UInt8], size: Int) {
    switch Result(catching: { () throws(DecodeError) in try HCIReturn.decode(type, from: parameters) }) {
    case .success(.success):
        fuzzCheck(parameters.first == 0 && parameters.count == 1 + size, "\(R.context): success from \(parameters.count) bytes")
    case .success(.failure(let status)):
        fuzzCheck(parameters.first.map { $0 != 0 && status.rawValue == $0 } ?? false, "\(R.context): wrong failure status")
    case .failure:
        fuzzCheck(parameters.first == 0 && parameters.count != 1 + size || parameters.isEmpty,
                  "\(R.context): rejected well-sized parameters")
    }
}
