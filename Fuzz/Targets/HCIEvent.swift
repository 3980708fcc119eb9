@_spi(Internals) import BLEWire

/// Every HCI event decoder (Vol 4, Part E, 7.7). The first byte is the event code, the rest
/// (at most 255 bytes, what the length field can carry) the parameters. Properties:
/// - a decoded event re-encodes to the same packet (`HCIEvent.packet`);
/// - for LE Meta events, the in-place advertising report walker
///   (`forEachAdvertisingReport`) agrees with the full decoder: same success, same reports;
/// - the H4 form of the walker agrees with the parameter form.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let packet = HCIEventPacket(code: input.u8(), parameters: input.take(255))

    let decoded = Result { () throws(DecodeError) in try HCIEvent(packet) }
    if case .success(let event) = decoded {
        fuzzCheck(event.packet == packet, "re-encoding \(event) changed the bytes")
    }
    guard packet.code == HCIEvent.Code.leMeta else { return 0 }

    var seen: [HCIEvent.LEAdvertisingReport] = []
    var seenExtended: [HCIEvent.LEExtendedAdvertisingReport] = []
    let walked = Result { () throws(DecodeError) in
        try HCIEvent.forEachAdvertisingReport(in: packet.parameters) { view in
            let data = Array(view.data)
            fuzzCheck(Array(packet.parameters[view.dataRange]) == data, "report data range disagrees with its bytes")
            if view.isExtended {
                seenExtended.append(.init(
                    eventType: ExtendedAdvertisingEventType(rawValue: view.eventType), addressType: view.addressType,
                    address: view.address, primaryPHY: view.primaryPHY, secondaryPHY: view.secondaryPHY,
                    advertisingSID: view.advertisingSID, txPower: view.txPower, rssi: view.rssi,
                    periodicAdvertisingInterval: view.periodicAdvertisingInterval,
                    directAddressType: 0, directAddress: .zero, data: data))
            } else {
                seen.append(.init(eventType: UInt8(truncatingIfNeeded: view.eventType), addressType: view.addressType,
                                  address: view.address, data: data, rssi: view.rssi))
            }
        }
    }

    let subevent = packet.parameters.first
    switch (decoded, walked) {
    case (.success(.leAdvertisingReport(let reports)), .success(let count)):
        fuzzCheck(count == reports.count && seen == reports, "walker and decoder disagree on legacy reports")
    case (.success(.leExtendedAdvertisingReport(let reports)), .success(let count)):
        let plain = reports.map { r -> HCIEvent.LEExtendedAdvertisingReport in
            var r = r; r.directAddressType = 0; r.directAddress = .zero; return r
        }
        fuzzCheck(count == reports.count && seenExtended == plain, "walker and decoder disagree on extended reports")
    case (.success, .success(let count)):
        fuzzCheck(count == 0, "walker found reports in a subevent without reports")
    case (.failure, .failure):
        break
    case (.failure, .success(let count)):
        // Only subevents without reports may fail in the decoder and pass the walker.
        fuzzCheck(count == 0 && subevent != HCIEvent.LESubevent.advertisingReport
                  && subevent != HCIEvent.LESubevent.extendedAdvertisingReport,
                  "walker accepted reports the decoder rejects")
    case (.success(let event), .failure(let error)):
        fuzzCheck(false, "decoder accepted \(event) but the walker failed: \(error)")
    }

    // The H4 entry point sees the same parameters.
    var h4: [UInt8] = [0x04, packet.code, UInt8(packet.parameters.count)]
    h4.append(contentsOf: packet.parameters)
    let viaH4 = h4.withUnsafeBytes { raw in
        Result { () throws(DecodeError) in try HCIEvent.forEachAdvertisingReport(h4: raw) { _ in } }
    }
    switch (walked, viaH4) {
    case (.success(let a), .success(let b)): fuzzCheck(a == b, "H4 walker counted differently")
    case (.failure(let a), .failure(let b)): fuzzCheck(a == b, "H4 walker failed differently")
    default: fuzzCheck(false, "H4 walker and parameter walker disagree")
    }
    return 0
}
