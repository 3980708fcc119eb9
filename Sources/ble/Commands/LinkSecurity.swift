#if canImport(Glibc)
import Glibc
#endif
import BLECore
import GATTClient
import SMP
import BLEWire

/// What `read`, `write`, `inspect` and `connect` do about security (Vol 3, Part C, 10.2):
/// a stored bond encrypts the link at once; `--security LEVEL` asks for that level before the
/// first request, pairing through the terminal when there is no bond good enough.
struct LinkSecurity: Sendable {
    static let option = OptionSpec.value("security", nil, "LEVEL",
                                         "encrypted or authenticated: reach this level before the first request, pairing when no bond gives it (default: encrypt with a stored bond, if any)")
    static let details = ["A stored bond (see 'ble pair', 'ble bonds') encrypts the link before the first request; a device that refuses a request for lack of security gets paired on the spot."]

    let required: SecurityLevel?
    let store: FileBondStore
    let agent: TerminalAgent

    static func parse(_ ctx: CommandContext) throws(UsageError) -> SecurityLevel? {
        guard let v = ctx.args.value("security") else { return nil }
        switch v {
        case "encrypted": return .encrypted
        case "authenticated": return .authenticated
        default: throw UsageError("--security needs encrypted or authenticated, not \"\(v)\"")
        }
    }

    init(_ ctx: CommandContext, required: SecurityLevel?, central: Central) async throws {
        self.required = required
        store = try await BondsCommand.store(ctx, central: central)
        await BondedAddresses.enable(ctx, central: central, store: store)
        agent = TerminalAgent(console: ctx.console, passkey: nil)
    }

    /// The pairing options for `level`: MITM protection (with an IO capability that can give
    /// it) for `.authenticated`.
    func options(for level: SecurityLevel) -> PairingOptions {
        var o = PairingOptions()
        o.ioCapability = level >= .authenticated || isatty(0) == 1 ? .keyboardDisplay : .noInputNoOutput
        o.keypressNotifications = agent.typesKeys
        return o
    }

    /// Encrypts `link` with its bond (unless `withBond` is false), or raises it to `--security`;
    /// throws one line naming the peer and what to do.
    func apply(to link: Connection, withBond: Bool = true) async throws {
        let bonded = withBond && store.bond(resolving: link.peer)?.longTermKey != nil
        let level = required ?? (bonded ? .encrypted : nil)
        guard let level else { return }
        do throws(PairingError) {
            try await link.requireSecurity(level, options: options(for: level), agent: agent, store: store)
        } catch {
            throw CLIFailure("\(error)")
        }
    }

    /// Throws one line unless a bond with `peer` holds the CSRK this side distributed, the key
    /// of Signed Write Commands (Vol 3, Part H, 2.4.5).
    func requireSigningKey(for peer: LEAddress) throws {
        guard store.bond(resolving: peer)?.localSignatureKey != nil else {
            throw CLIFailure("no signing key (CSRK) of this side for \(peer.address): pair with 'ble pair \(peer.address) --sign-key' to distribute one, then write with --signed")
        }
    }

    /// Lets the Peripheral sign writes with the bond's CSRK (`Peripheral.writeSigned`).
    func installSigner(on peripheral: Peripheral, link: Connection) async {
        await peripheral.setWriteSigner(store.dataSigner(for: link.peer).writeSigner)
    }

    /// Lets the link pair when the device refuses an L2CAP channel for lack of security, with
    /// the IO capability the level needs.
    func install(on link: Connection) async {
        await link.setSecurityRaiser { [weak link] level, keySize in
            guard let link else { return }
            try await link.requireSecurity(level, keySize: keySize, options: options(for: level), agent: agent, store: store)
        }
    }

    /// The device refused a request for lack of security (Insufficient Encryption 0x0F,
    /// Insufficient Authentication 0x05, Encryption Key Size Too Short 0x0C; Vol 3, Part F,
    /// 3.4.1.1) and this run did not get past it: one line with the refusal and what to run.
    /// Other errors come back as they are.
    static func advice(for error: any Error) -> any Error {
        guard let gatt = error as? GATTError, let code = gatt.attErrorCode, let peer = gatt.peer,
              let operation = gatt.operation, let target = gatt.target else { return error }
        let refused = "\(peer) refused \(operation) \(target): \(code)"
        switch code {
        case .insufficientEncryption:
            return CLIFailure("\(refused); it needs an encrypted link: run 'ble pair \(peer)' first or pass --security encrypted")
        case .insufficientAuthentication:
            return CLIFailure("\(refused); it needs an authenticated link (a key made with a passkey or a number comparison, not Just Works): run 'ble pair \(peer) --mitm' on a terminal first or pass --security authenticated")
        case .encryptionKeySizeTooShort:
            return CLIFailure("\(refused); it needs a longer encryption key than this link's: run 'ble pair \(peer)' again for a 16-octet key")
        default:
            return error
        }
    }

    /// Lets the Peripheral pair when the device refuses a request for lack of security.
    func install(on peripheral: Peripheral, link: Connection) async {
        await peripheral.setSecurityRaiser(link.securityRaiser(options: options(for: .encrypted), agent: agent, store: store))
    }
}
