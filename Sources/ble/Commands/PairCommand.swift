#if canImport(Glibc)
import Glibc
#endif
import BLECore
import SMP
import BLEWire

/// `ble pair DEVICE`: pairs (Vol 3, Part H), prints the level reached, keeps the bond.
enum PairCommand {
    static let ioNames: [(String, IOCapability)] = [
        ("display-only", .displayOnly), ("display-yesno", .displayYesNo), ("keyboard-only", .keyboardOnly),
        ("no-io", .noInputNoOutput), ("keyboard-display", .keyboardDisplay),
    ]

    static let spec = CommandSpec(
        name: "pair",
        summary: "pair with a device and keep the bond",
        usage: ["pair DEVICE [--io display-only|display-yesno|keyboard-only|no-io|keyboard-display] [--passkey N] [--sc-only | --legacy] [--mitm] [--no-bond] [--sign-key] [--own-address public|static|rpa] [--scan-timeout SECONDS]"],
        options: [
            .value("io", nil, "CAPABILITY", "what this side can show or type (default keyboard-display when on a terminal, else no-io)"),
            .value("passkey", nil, "N", "the six-digit passkey the device shows (instead of asking)"),
            .flag("sc-only", nil, "refuse LE legacy pairing (Secure Connections Only)"),
            .flag("legacy", nil, "offer only LE legacy pairing"),
            .flag("mitm", nil, "require MITM protection (no Just Works)"),
            .flag("no-bond", nil, "pair for this link only; keep no keys"),
            .flag("sign-key", nil, "also give the device this side's signing key (CSRK), for 'ble write --signed'"),
            OwnAddressOption.option,
            DeviceArgument.scanTimeoutOption,
        ],
        details: DeviceArgument.details + [
            "A passkey to type or a number to confirm is asked on the terminal (or read from stdin when it is not one).",
            "Bonds go to --bond-dir, $BLE_BOND_DIR, or ~/.local/state/swift-ble-host/bonds; see 'ble bonds'.",
        ],
        examples: [
            ("ble pair F0:5E:B1:00:00:01", "encrypted, Secure Connections, bonded"),
            ("ble pair F0:5E:B1:00:00:02 --io keyboard-only --passkey 123456", "encrypted, authenticated, Secure Connections, bonded"),
            ("ble pair F0:5E:B1:00:00:03 --sign-key", "bonded, and the device can check 'ble write --signed'"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        let a = ctx.args
        let target = try DeviceResolver.parse(try ctx.positionals(["DEVICE"])[0])
        let scanTimeout = try DeviceArgument.scanTimeout(ctx)
        if a.has("sc-only") && a.has("legacy") { throw UsageError("give --sc-only or --legacy, not both") }
        if a.has("sign-key") && a.has("no-bond") { throw UsageError("--sign-key distributes a key to keep: give --sign-key or --no-bond, not both") }
        var options = PairingOptions()
        let interactive = isatty(0) == 1
        options.ioCapability = interactive ? .keyboardDisplay : .noInputNoOutput
        if let io = a.value("io") {
            guard let c = ioNames.first(where: { $0.0 == io })?.1 else {
                throw UsageError("--io needs one of \(ioNames.map(\.0).joined(separator: ", ")), not \"\(io)\"")
            }
            options.ioCapability = c
        }
        let passkey = try a.value("passkey").map { v throws(UsageError) in try Values.integer(v, option: "--passkey", as: UInt32.self) }
        if let passkey, passkey > 999_999 { throw UsageError("--passkey is six digits (0 to 999999), not \(passkey)") }
        if passkey != nil && a.value("io") == nil { options.ioCapability = .keyboardOnly }
        options.secureConnectionsOnly = a.has("sc-only")
        options.secureConnections = !a.has("legacy")
        options.mitm = a.has("mitm")
        options.bonding = !a.has("no-bond")
        if a.has("sign-key") { options.initiatorKeys.insert(.signingKey) }
        let agent = TerminalAgent(console: ctx.console, passkey: passkey)
        options.keypressNotifications = agent.typesKeys

        let ownAddress = try OwnAddressOption.parse(ctx)
        try await withCentral(ctx) { central in
            var options = options
            // A private own address: the device gets this side's IRK and identity address.
            try await OwnAddressOption.apply(ownAddress, ctx, central: central)
            if let identity = try await OwnAddressOption.identity(ownAddress, ctx, central: central) {
                options.initiatorKeys.insert(.identityKey)
                options.localIdentity = identity
            }
            let store = try await BondsCommand.store(ctx, central: central)
            await BondedAddresses.enable(ctx, central: central, store: store)
            let peer = try await DeviceResolver.resolve(target, central: central, scanTimeout: scanTimeout, console: ctx.console, bonds: store)
            let link = try await central.connect(peer, timeout: ctx.globals.timeoutDuration)
            do {
                let bond = try await link.pair(options: options, agent: agent, store: options.bonding ? store : nil)
                let level = describe(bond, link: await link.securityLevel, bonded: options.bonding)
                if ctx.globals.json {
                    ctx.console.out(JSONValue.object([("peer", .string("\(peer.address)")), ("level", .string(level)),
                                                 ("identity", bond.identityAddress.map { .string("\($0.address)") } ?? .null)]).text)
                } else {
                    ctx.console.out(level)
                }
                try? await link.disconnect(timeout: .seconds(2))
            } catch let error as PairingError {
                try? await link.disconnect(timeout: .seconds(2))
                throw CLIFailure("\(error)")
            }
        }
    }

    /// "encrypted, authenticated, Secure Connections, bonded" (", signing key given" with a CSRK
    /// this side distributed). Whether the key is MITM-protected comes from the link: a legacy
    /// pairing without bonding distributes no LTK to tell it by.
    static func describe(_ bond: Bond, link: SecurityLevel, bonded: Bool) -> String {
        var parts = [BondsCommand.level(authenticated: link >= .authenticated || bond.longTermKey?.authenticated == true,
                                        secureConnections: bond.longTermKey?.secureConnections == true)]
        if bonded { parts.append("bonded") }
        if bond.localSignatureKey != nil { parts.append("signing key given") }
        return parts.joined(separator: ", ")
    }
}

extension String {
    func trimmingCharacters() -> String {
        String(drop { $0 == " " || $0 == "\r" || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\r" || $0 == "\t" }.reversed())
    }
}
