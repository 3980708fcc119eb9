/// Fixed channel identifiers on an LE-U logical link (Core Spec Vol 3, Part A, 2.1).
public enum L2CAPChannelID {
    public static let att: UInt16 = 0x0004
    public static let leSignaling: UInt16 = 0x0005
    public static let securityManager: UInt16 = 0x0006
}

/// Connection parameters as the LE signaling channel and HCI carry them
/// (intervals in 1.25 ms units, timeout in 10 ms units).
public struct ConnectionParameterRange: Hashable, Sendable {
    public var minimumInterval: UInt16
    public var maximumInterval: UInt16
    public var peripheralLatency: UInt16
    public var supervisionTimeout: UInt16

    public init(minimumInterval: UInt16, maximumInterval: UInt16, peripheralLatency: UInt16, supervisionTimeout: UInt16) {
        self.minimumInterval = minimumInterval
        self.maximumInterval = maximumInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
    }

    /// True when the values respect the ranges of Vol 3, Part A, 4.20 and Vol 6, Part B, 4.5.2:
    /// interval 7.5 ms to 4 s, min <= max, latency < 500, timeout 100 ms to 32 s and longer than
    /// (1 + latency) * max interval * 2.
    public var isValid: Bool {
        guard (6...3200).contains(minimumInterval), (6...3200).contains(maximumInterval), minimumInterval <= maximumInterval,
              peripheralLatency <= 499, (10...3200).contains(supervisionTimeout) else { return false }
        // timeout (10 ms units) * 10 > (1 + latency) * max (1.25 ms units) * 1.25 * 2
        return Int(supervisionTimeout) * 40 > (1 + Int(peripheralLatency)) * Int(maximumInterval) * 10
    }
}

extension ConnectionParameterRange {
    /// The requested connection intervals as durations (the PDU carries 1.25 ms units).
    ///
    ///     options.parameterUpdatePolicy = { _, range in range.intervals.maximum <= .milliseconds(40) }
    public var intervals: (minimum: Duration, maximum: Duration) {
        (HCITimeUnit.connectionInterval.duration(minimumInterval), HCITimeUnit.connectionInterval.duration(maximumInterval))
    }

    /// The requested supervision timeout as a duration (the PDU carries 10 ms units).
    public var timeout: Duration { HCITimeUnit.supervisionTimeout.duration(supervisionTimeout) }
}

/// One command on the LE signaling channel (Vol 3, Part A, 4).
///
///     let cmd = try L2CAPSignalingCommand(bytes: sdu)   // e.g. a Connection Parameter Update Request
public struct L2CAPSignalingCommand: Hashable, Sendable {
    public enum Code: UInt8, Sendable {
        case commandReject = 0x01
        case disconnectionRequest = 0x06
        case disconnectionResponse = 0x07
        case connectionParameterUpdateRequest = 0x12
        case connectionParameterUpdateResponse = 0x13
        case leCreditBasedConnectionRequest = 0x14
        case leCreditBasedConnectionResponse = 0x15
        case flowControlCreditIndication = 0x16
        case creditBasedConnectionRequest = 0x17
        case creditBasedConnectionResponse = 0x18
        case creditBasedReconfigureRequest = 0x19
        case creditBasedReconfigureResponse = 0x1A
    }

    /// What the command says, for the commands a central has to act on.
    public enum Body: Hashable, Sendable {
        /// Reason 0x0000 not understood, 0x0001 signaling MTU exceeded, 0x0002 invalid CID.
        case commandReject(reason: UInt16, data: [UInt8])
        case connectionParameterUpdateRequest(ConnectionParameterRange)
        /// Result 0x0000 accepted, 0x0001 rejected.
        case connectionParameterUpdateResponse(result: UInt16)
        case disconnectionRequest(destinationCID: UInt16, sourceCID: UInt16)
        case disconnectionResponse(destinationCID: UInt16, sourceCID: UInt16)
        /// Vol 3, Part A, 4.22: open one LE credit-based channel on `psm` (SPSM).
        case leCreditBasedConnectionRequest(psm: UInt16, sourceCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16)
        /// Vol 3, Part A, 4.23: `result` 0x0000 is success (see `CreditBasedConnectionResult`).
        case leCreditBasedConnectionResponse(destinationCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: UInt16)
        /// Vol 3, Part A, 4.24: the sender of this indication may receive `credits` more K-frames on `cid`
        /// (the sender's own source CID).
        case flowControlCreditIndication(cid: UInt16, credits: UInt16)
        /// Vol 3, Part A, 4.25: open up to five enhanced credit-based channels on `psm` at once.
        case creditBasedConnectionRequest(psm: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, sourceCIDs: [UInt16])
        /// Vol 3, Part A, 4.26: one destination CID per requested channel (0x0000 for a refused one).
        case creditBasedConnectionResponse(mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: UInt16, destinationCIDs: [UInt16])
        /// Vol 3, Part A, 4.27: new MTU and MPS for the channels the sender receives on.
        case creditBasedReconfigureRequest(mtu: UInt16, mps: UInt16, destinationCIDs: [UInt16])
        /// Vol 3, Part A, 4.28: 0x0000 success, 0x0001 MTU reduction not allowed, 0x0002 MPS
        /// reduction not allowed for more than one channel, 0x0003 invalid destination CID,
        /// 0x0004 unacceptable parameters.
        case creditBasedReconfigureResponse(result: UInt16)
        /// Any other code, kept raw.
        case other(code: UInt8, data: [UInt8])
    }

    public var identifier: UInt8
    public var body: Body

    public init(identifier: UInt8, body: Body) {
        self.identifier = identifier
        self.body = body
    }

    public var code: UInt8 {
        switch body {
        case .commandReject: return Code.commandReject.rawValue
        case .connectionParameterUpdateRequest: return Code.connectionParameterUpdateRequest.rawValue
        case .connectionParameterUpdateResponse: return Code.connectionParameterUpdateResponse.rawValue
        case .disconnectionRequest: return Code.disconnectionRequest.rawValue
        case .disconnectionResponse: return Code.disconnectionResponse.rawValue
        case .leCreditBasedConnectionRequest: return Code.leCreditBasedConnectionRequest.rawValue
        case .leCreditBasedConnectionResponse: return Code.leCreditBasedConnectionResponse.rawValue
        case .flowControlCreditIndication: return Code.flowControlCreditIndication.rawValue
        case .creditBasedConnectionRequest: return Code.creditBasedConnectionRequest.rawValue
        case .creditBasedConnectionResponse: return Code.creditBasedConnectionResponse.rawValue
        case .creditBasedReconfigureRequest: return Code.creditBasedReconfigureRequest.rawValue
        case .creditBasedReconfigureResponse: return Code.creditBasedReconfigureResponse.rawValue
        case .other(let code, _): return code
        }
    }

    /// Decodes one command from a signaling SDU. LE allows one command per C-frame.
    public init(bytes: [UInt8]) throws(DecodeError) {
        var r = ByteReader(bytes, context: "L2CAP signaling command")
        let code = try r.u8()
        identifier = try r.u8()
        let length = Int(try r.u16())
        guard r.remaining == length else {
            throw .malformed(what: "L2CAP signaling command", detail: "length field \(length) but \(r.remaining) data bytes")
        }
        var d = ByteReader(r.rest(), context: "L2CAP signaling command data")
        switch Code(rawValue: code) {
        case .commandReject:
            body = .commandReject(reason: try d.u16(), data: d.rest())
        case .connectionParameterUpdateRequest:
            body = .connectionParameterUpdateRequest(ConnectionParameterRange(
                minimumInterval: try d.u16(), maximumInterval: try d.u16(),
                peripheralLatency: try d.u16(), supervisionTimeout: try d.u16()))
            try d.expectEnd()
        case .connectionParameterUpdateResponse:
            body = .connectionParameterUpdateResponse(result: try d.u16())
            try d.expectEnd()
        case .disconnectionRequest:
            body = .disconnectionRequest(destinationCID: try d.u16(), sourceCID: try d.u16())
            try d.expectEnd()
        case .disconnectionResponse:
            body = .disconnectionResponse(destinationCID: try d.u16(), sourceCID: try d.u16())
            try d.expectEnd()
        case .leCreditBasedConnectionRequest:
            body = .leCreditBasedConnectionRequest(psm: try d.u16(), sourceCID: try d.u16(), mtu: try d.u16(), mps: try d.u16(), initialCredits: try d.u16())
            try d.expectEnd()
        case .leCreditBasedConnectionResponse:
            body = .leCreditBasedConnectionResponse(destinationCID: try d.u16(), mtu: try d.u16(), mps: try d.u16(), initialCredits: try d.u16(), result: try d.u16())
            try d.expectEnd()
        case .flowControlCreditIndication:
            body = .flowControlCreditIndication(cid: try d.u16(), credits: try d.u16())
            try d.expectEnd()
        case .creditBasedConnectionRequest:
            let psm = try d.u16(), mtu = try d.u16(), mps = try d.u16(), credits = try d.u16()
            body = .creditBasedConnectionRequest(psm: psm, mtu: mtu, mps: mps, initialCredits: credits, sourceCIDs: try Self.cidList(&d, min: 1))
        case .creditBasedConnectionResponse:
            let mtu = try d.u16(), mps = try d.u16(), credits = try d.u16(), result = try d.u16()
            body = .creditBasedConnectionResponse(mtu: mtu, mps: mps, initialCredits: credits, result: result, destinationCIDs: try Self.cidList(&d, min: 0))
        case .creditBasedReconfigureRequest:
            let mtu = try d.u16(), mps = try d.u16()
            body = .creditBasedReconfigureRequest(mtu: mtu, mps: mps, destinationCIDs: try Self.cidList(&d, min: 1))
        case .creditBasedReconfigureResponse:
            body = .creditBasedReconfigureResponse(result: try d.u16())
            try d.expectEnd()
        default:
            body = .other(code: code, data: d.rest())
        }
    }

    public var bytes: [UInt8] {
        var data: [UInt8] = []
        switch body {
        case .commandReject(let reason, let rest):
            data.appendLE(reason); data.append(contentsOf: rest)
        case .connectionParameterUpdateRequest(let p):
            data.appendLE(p.minimumInterval); data.appendLE(p.maximumInterval)
            data.appendLE(p.peripheralLatency); data.appendLE(p.supervisionTimeout)
        case .connectionParameterUpdateResponse(let result):
            data.appendLE(result)
        case .disconnectionRequest(let d, let s), .disconnectionResponse(let d, let s):
            data.appendLE(d); data.appendLE(s)
        case .leCreditBasedConnectionRequest(let psm, let scid, let mtu, let mps, let credits):
            for v in [psm, scid, mtu, mps, credits] { data.appendLE(v) }
        case .leCreditBasedConnectionResponse(let dcid, let mtu, let mps, let credits, let result):
            for v in [dcid, mtu, mps, credits, result] { data.appendLE(v) }
        case .flowControlCreditIndication(let cid, let credits):
            data.appendLE(cid); data.appendLE(credits)
        case .creditBasedConnectionRequest(let psm, let mtu, let mps, let credits, let cids):
            for v in [psm, mtu, mps, credits] + cids { data.appendLE(v) }
        case .creditBasedConnectionResponse(let mtu, let mps, let credits, let result, let cids):
            for v in [mtu, mps, credits, result] + cids { data.appendLE(v) }
        case .creditBasedReconfigureRequest(let mtu, let mps, let cids):
            for v in [mtu, mps] + cids { data.appendLE(v) }
        case .creditBasedReconfigureResponse(let result):
            data.appendLE(result)
        case .other(_, let raw):
            data = raw
        }
        var out: [UInt8] = [code, identifier]
        out.appendLE(UInt16(truncatingIfNeeded: data.count))
        out.append(contentsOf: data)
        return out
    }

    /// The list of 1 to 5 CIDs that ends the enhanced credit-based commands (Vol 3, Part A,
    /// 4.25-4.27: at most five channels per command).
    private static func cidList(_ d: inout ByteReader, min: Int) throws(DecodeError) -> [UInt16] {
        guard d.remaining % 2 == 0 else {
            throw .malformed(what: "L2CAP credit based command", detail: "CID list of \(d.remaining) bytes is not a whole number of CIDs")
        }
        let count = d.remaining / 2
        guard count >= min, count <= 5 else {
            throw .invalidValue(what: "L2CAP credit based command", field: "number of CIDs", value: count)
        }
        var cids: [UInt16] = []
        for _ in 0..<count { cids.append(try d.u16()) }
        return cids
    }
}

extension ConnectionParameterRange {
    /// The same values as HCI LE Connection Update parameters (CE lengths 0).
    public var hciParameters: LEConnectionParameters {
        LEConnectionParameters(intervalMin: minimumInterval, intervalMax: maximumInterval, maxLatency: peripheralLatency, supervisionTimeout: supervisionTimeout)
    }
}
