import ATT
import BLECore
import BLEWire

/// Gives the SignCounter and MAC of a Signed Write Command's opcode, handle and value as
/// sent (Vol 3, Part H, 2.4.5). The module SMP makes one from a bond with this side's CSRK:
/// `store.dataSigner(for: peer).writeSigner`.
public typealias WriteSigner = @Sendable (_ message: [UInt8]) async throws -> (signCounter: UInt32, mac: UInt64)

/// Signed Write Without Response (Vol 3, Part G, 4.9.2): data authenticated with the CSRK
/// this side distributed when pairing, on a link that is not encrypted.
extension Peripheral {
    /// Sets what signs `writeSigned`; nil: signed writes fail with `signingFailed`.
    ///
    ///     await peripheral.setWriteSigner(bonds.dataSigner(for: link.peer).writeSigner)
    public func setWriteSigner(_ signer: WriteSigner?) {
        writeSigner = signer
    }

    /// Writes `value` without response, signed: a Signed Write Command (Vol 3, Part F,
    /// 3.4.5.4) when the link is not encrypted, a plain Write Command when it is (4.9.2:
    /// an encrypted link already authenticates the data). The characteristic must
    /// list Authenticated Signed Writes; the value is at most ATT_MTU - 15 octets.
    ///
    ///     try await peripheral.writeSigned([0x01], to: controlPoint)
    public func writeSigned(_ value: some GATTEncodable, to characteristic: CharacteristicIdentifier) async throws(GATTError) {
        let c = try await resolve(characteristic)
        let target = GATTTarget.attribute(c.uuid, handle: c.valueHandle)
        guard c.properties.contains(.authenticatedSignedWrites) else {
            throw .notSupported(operation: .signedWriting, target: target, properties: c.properties, peer: peerAddress)
        }
        let bytes = value.gattValue
        if let link = connection, await link.securityLevel >= .encrypted {
            try await writeValue(bytes, handle: c.valueHandle, type: .withoutResponse, target: target)
            return
        }
        let p = try await leaseProcedures()
        defer { release(p) }
        let max = Int(await p.bearer.mtu) - 15
        guard bytes.count <= max else { throw .valueTooLong(length: bytes.count, maximum: max, operation: .signedWriting, target: target) }
        guard let writeSigner else { throw .signingFailed(target: target, peer: peerAddress, reason: "no signer: set one with Peripheral.setWriteSigner") }
        let message = [ATTOpcode.signedWriteCommand.rawValue, UInt8(truncatingIfNeeded: c.valueHandle), UInt8(c.valueHandle >> 8)] + bytes
        let signature: ATTSignature
        do {
            let s = try await writeSigner(message)
            signature = ATTSignature(signCounter: s.signCounter, mac: s.mac)
        } catch {
            throw .signingFailed(target: target, peer: peerAddress, reason: "\(error)")
        }
        try await perform(.signedWriting, target, on: p) { p async throws(GATTProcedureError) in
            try await p.signedWriteWithoutResponse(handle: c.valueHandle, value: bytes, signature: signature)
        }
    }
}
