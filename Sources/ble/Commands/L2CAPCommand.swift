import BLECore

/// `ble l2cap DEVICE --psm N`: netcat over an LE credit-based channel (Core Spec 5.4 Vol 3,
/// Part A, 10.1): stdin to the channel, the channel to stdout. The stack's own channel, or
/// the kernel's on a kernel-owned adapter (`-d hci-raw:N`, see `L2CAPOptions`).
enum L2CAPCommand {
    static let spec = CommandSpec(
        name: "l2cap",
        summary: "open an L2CAP LE credit-based channel and copy stdin to it and it to stdout",
        usage: ["l2cap DEVICE --psm PSM [--mtu N] [--mps N] [--idle SECONDS] [--security LEVEL]", "l2cap DEVICE --listen PSM [--mtu N] [--idle SECONDS] [--security LEVEL]"],
        options: [
            .value("psm", nil, "PSM", "open a channel to this LE_PSM (decimal or 0x hex)"),
            .value("listen", nil, "PSM", "wait for the device to open a channel to this LE_PSM instead"),
            .value("mtu", nil, "N", "largest SDU this side accepts (23-65535; default 2048)"),
            .value("mps", nil, "N", "largest K-frame payload this side accepts (23-65533; default 247; the stack's own channels only)"),
            .value("idle", nil, "SECONDS", "after stdin ends, stop when nothing arrived for this long (default 2)"),
            LinkSecurity.option,
            DeviceArgument.scanTimeoutOption,
        ],
        details: DeviceArgument.details + [
            "A stored bond (see 'ble pair') encrypts the link before the channel is opened; --security LEVEL reaches that level first, pairing through the terminal when no bond gives it. A device that refuses the channel for lack of security (insufficient authentication, encryption or key size) gets paired on the spot and asked once more.",
            "With --listen, --security LEVEL is also what the channel needs: a request on a link below it is refused (insufficient encryption or authentication) and no channel is made; the device may pair and ask again.",
            "Each read from stdin goes out as one SDU (at most the peer's MTU); each SDU received is written to stdout as it is, or with --json as one line {\"time\", \"length\", \"hex\"}.",
            "After stdin ends the command waits until everything was handed to the link, keeps copying until the peer closes the channel or --idle seconds pass without data, then closes and exits 0.",
            "A summary (bytes and SDUs each way, throughput, how often a send waited for credits) goes to stderr.",
            "With -d hci-raw:N (an adapter the kernel owns, as with bluetoothd) the kernel's L2CAP socket carries the channel (SOCK_SEQPACKET on hciN; no root needed for a DEVICE given by address): the kernel makes the link, segments the SDUs and handles the credits; --security sets BT_SECURITY and the kernel pairs, asking its agent (bluetoothd's); the level the socket reached is printed once the channel is open. --listen connects to the device (an ATT socket holds the link), listens on the PSM and takes the device's channel; channels from other devices are closed. --mps and --btsnoop are for the stack's own channels; the summary then says the kernel handled the credits, and idle counts from the last SDU.",
        ],
        examples: [
            ("ble l2cap F0:5E:B1:00:00:21 --psm 0x0080 --mtu 65535 < firmware.bin > echo.bin", "copy a file through an echo server"),
            ("ble l2cap F0:5E:B1:00:00:21 --psm 0x0080 --json --idle 5 < request.bin", "send a request and print each answer SDU as hex"),
            ("ble l2cap \"COC\" --listen 0x0081 --json < /dev/null", "wait for the device to open a channel and print its SDUs as hex"),
            ("ble l2cap F0:5E:B1:00:00:51 --psm 0x0091 --security authenticated < request.bin", "pair with MITM protection, then open a channel that needs it"),
            ("ble -d hci-raw:0 l2cap F0:5E:B1:00:00:21 --psm 0x0080 < request.bin > answer.bin", "the same through the kernel's L2CAP socket, next to bluetoothd"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        let options = try L2CAPOptions(ctx)
        if let adapter = options.kernelAdapter {
            try await L2CAPKernel.run(ctx, options, adapter: adapter)
        } else {
            try await ownStack(ctx, options)
        }
    }

    /// The channel on the stack's own ACL path: connect, secure, open or accept, copy.
    static func ownStack(_ ctx: CommandContext, _ options: L2CAPOptions) async throws {
        try await withCentral(ctx) { central in
            let security = try await LinkSecurity(ctx, required: options.security, central: central)
            let peer = try await DeviceResolver.resolve(options.target, central: central, scanTimeout: options.scanTimeout, console: ctx.console)
            ctx.console.status("connecting to \(peer)...")
            let link = try await central.connect(peer, timeout: ctx.globals.timeoutDuration)
            try await security.apply(to: link)
            await security.install(on: link)
            let channel: CreditBasedChannel
            switch options.mode {
            case .open(let psm):
                do throws(L2CAPChannelError) {
                    channel = try await link.openL2CAPChannel(psm: psm, mtu: options.mtu, mps: options.mps, timeout: ctx.globals.timeoutDuration)
                } catch {
                    throw CLIFailure("\(error)")
                }
            case .listen(let psm):
                let incoming = try await link.acceptL2CAPChannels(psm: psm, mtu: options.mtu, mps: options.mps, security: options.security ?? .none)
                ctx.console.status("waiting for \(peer) to open a channel to PSM 0x\(hex(psm, width: 4))...")
                channel = try await withTimeout(ctx.globals.timeoutDuration, "waiting for \(peer) to open a channel to PSM 0x\(hex(psm, width: 4))") {
                    var iterator = incoming.makeAsyncIterator()
                    guard let c = await iterator.next() else { throw CLIFailure("the link to \(peer) ended before it opened a channel") }
                    return c
                }
            }
            ctx.console.status("channel open: PSM 0x\(hex(channel.psm, width: 4)), CID 0x\(hex(channel.localCID, width: 4)) -> 0x\(hex(channel.remoteCID, width: 4)), peer MTU \(await channel.peerMTU) MPS \(await channel.peerMPS)")
            try await L2CAPCopy.run(ctx, channel, idle: options.idle)
            try? await link.disconnect(timeout: .seconds(2))
        }
    }
}
