import BLECore

/// One-line descriptions of the credit-based signaling commands (Vol 3, Part A, 4.22-4.28).
extension PacketDescriber {
    static func creditBasedSignaling(_ cmd: L2CAPSignalingCommand) -> String {
        let id = "id \(cmd.identifier)"
        func cids(_ list: [UInt16]) -> String { list.map { "0x\(hex($0, width: 4))" }.joined(separator: ",") }
        switch cmd.body {
        case .leCreditBasedConnectionRequest(let psm, let scid, let mtu, let mps, let credits):
            return "LE Credit Based Connection Request (0x14) \(id): psm 0x\(hex(psm, width: 4)) scid 0x\(hex(scid, width: 4)) mtu \(mtu) mps \(mps) credits \(credits)"
        case .leCreditBasedConnectionResponse(let dcid, let mtu, let mps, let credits, let result):
            return "LE Credit Based Connection Response (0x15) \(id): dcid 0x\(hex(dcid, width: 4)) mtu \(mtu) mps \(mps) credits \(credits) result \(CreditBasedConnectionResult(rawValue: result))"
        case .flowControlCreditIndication(let cid, let credits):
            return "Flow Control Credit Indication (0x16) \(id): cid 0x\(hex(cid, width: 4)) credits \(credits)"
        case .creditBasedConnectionRequest(let psm, let mtu, let mps, let credits, let scids):
            return "Credit Based Connection Request (0x17) \(id): psm 0x\(hex(psm, width: 4)) mtu \(mtu) mps \(mps) credits \(credits) scids \(cids(scids))"
        case .creditBasedConnectionResponse(let mtu, let mps, let credits, let result, let dcids):
            return "Credit Based Connection Response (0x18) \(id): mtu \(mtu) mps \(mps) credits \(credits) result \(CreditBasedConnectionResult(rawValue: result)) dcids \(cids(dcids))"
        case .creditBasedReconfigureRequest(let mtu, let mps, let dcids):
            return "Credit Based Reconfigure Request (0x19) \(id): mtu \(mtu) mps \(mps) dcids \(cids(dcids))"
        case .creditBasedReconfigureResponse(let result):
            return "Credit Based Reconfigure Response (0x1A) \(id): result 0x\(hex(result, width: 4))"
        default:
            return "\(signalingName(cmd.code)) (0x\(hex(cmd.code, width: 2))) \(id)"
        }
    }
}
