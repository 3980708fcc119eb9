import GATTClient
import BLECore
import ATT
import BLEWire

extension GATTServer {
    /// The security of link `id` (unencrypted unless the link reports it).
    func security(_ id: ObjectIdentifier) -> GATTLinkSecurity {
        guard let s = links[id]?.security else { return GATTLinkSecurity() }
        return GATTLinkSecurity(isEncrypted: s.isEncrypted, isAuthenticated: s.isAuthenticated, encryptionKeySize: s.isEncrypted ? s.encryptionKeySize : 0)
    }

    /// Why a read is refused (Vol 3, Part F, 3.2.5), or nil.
    func readDenied(_ a: ServerAttribute, link id: ObjectIdentifier) -> ATTErrorCode? {
        guard a.permissions.readable else { return .readNotPermitted }
        return securityDenied(a, authenticated: .readAuthenticated, encrypted: .readEncrypted, authorized: .readAuthorized, link: id)
    }

    /// Why a write is refused (Vol 3, Part F, 3.2.5), or nil.
    func writeDenied(_ a: ServerAttribute, link id: ObjectIdentifier) -> ATTErrorCode? {
        guard a.permissions.writable else { return .writeNotPermitted }
        return securityDenied(a, authenticated: .writeAuthenticated, encrypted: .writeEncrypted, authorized: .writeAuthorized, link: id)
    }

    /// Why the link's security is not enough for `a` (Vol 3, Part C, 10.3; Part F, 4), or nil.
    /// Authentication and encryption come first, so the client pairs before it is asked to
    /// be authorized.
    private func securityDenied(_ a: ServerAttribute, authenticated: GATTDatabase.Permissions, encrypted: GATTDatabase.Permissions,
                                authorized: GATTDatabase.Permissions, link id: ObjectIdentifier) -> ATTErrorCode? {
        let p = a.permissions
        guard !p.isDisjoint(with: [authenticated, encrypted, authorized, .fullKeySize]) else { return nil }
        let s = security(id)
        if p.contains(authenticated), !s.isAuthenticated { return refused(.insufficientAuthentication, needs: .authenticated, link: id) }
        if p.contains(encrypted) || p.contains(.fullKeySize), !s.isEncrypted { return refused(.insufficientEncryption, needs: .encrypted, link: id) }
        if p.contains(.fullKeySize), s.encryptionKeySize < 16 { return refused(.encryptionKeySizeTooShort, needs: .encrypted, link: id) }
        if p.contains(authorized), authorize?(request(a, link: id, offset: 0)) != true { return .insufficientAuthorization }
        return nil
    }
}

extension GATTServer {
    /// Tells a link that can ask for more security (`ATTServerLinkSecurityRequest`) why its
    /// request is refused; returns `code`.
    private func refused(_ code: ATTErrorCode, needs level: SecurityLevel, link id: ObjectIdentifier) -> ATTErrorCode {
        (links[id]?.link as? any ATTServerLinkSecurityRequest)?.securityRefused(needs: level)
        return code
    }
}

extension GATTDatabase.Permissions {
    var readable: Bool { !intersection([.read, .readEncrypted, .readAuthenticated, .readAuthorized]).isEmpty }
    var writable: Bool { !intersection([.write, .writeEncrypted, .writeAuthenticated, .writeAuthorized]).isEmpty }
}
