import BLECore
import BLEWire
import BLETransport

/// `ble l2cap` on a kernel-owned adapter (`-d hci-raw:N`): the channel is a kernel L2CAP
/// socket (`L2CAPSocketChannel`), copied by the same loop as the stack's own channels.
enum L2CAPKernel {
    static func run(_ ctx: CommandContext, _ options: L2CAPOptions, adapter: Int) async throws {
        let peer = try await address(ctx, options)
        let executor = AdapterExecutor(label: "ble-l2cap-hci\(adapter)")
        let timeout = ctx.globals.timeoutDuration
        let channel: L2CAPSocketChannel
        // Held while the channel is copied: the socket that keeps the link up for --listen.
        var link: L2CAPSocketChannel?
        switch options.mode {
        case .open(let psm):
            ctx.console.status("connecting to \(peer) through the kernel's L2CAP socket on hci\(adapter)...")
            do throws(L2CAPSocketError) {
                channel = try await L2CAPSocketChannel.connect(adapterIndex: adapter, peer: peer, psm: psm, mtu: options.mtu,
                                                               security: options.security, executor: executor, timeout: timeout)
            } catch {
                throw failure(error, adapter: adapter)
            }
        case .listen(let psm):
            let listener: L2CAPSocketListener
            do throws(L2CAPSocketError) {
                // Listening first: the device may open its channel as soon as the link is up.
                listener = try L2CAPSocketChannel.listen(adapterIndex: adapter, psm: psm, mtu: options.mtu, security: options.security, executor: executor)
                ctx.console.status("connecting to \(peer) through the kernel on hci\(adapter)...")
                link = try await L2CAPSocketChannel.connect(adapterIndex: adapter, peer: peer, security: options.security, executor: executor, timeout: timeout)
            } catch {
                throw failure(error, adapter: adapter)
            }
            ctx.console.status("waiting for \(peer) to open a channel to PSM 0x\(hex(psm, width: 4))...")
            do {
                channel = try await accept(ctx, listener, from: peer, psm: psm, adapter: adapter, within: timeout)
            } catch {
                listener.close()
                link?.close()
                throw error
            }
            listener.close()  // the accepted channel stays open
        }
        ctx.console.status("channel open through the kernel on hci\(adapter): PSM 0x\(hex(channel.psm ?? 0, width: 4)), CID 0x\(hex(channel.localCID, width: 4)), MTU \(channel.mtu), peer MTU \(channel.peerMTU)")
        // The link's level as the kernel reports it on the socket (BT_SECURITY), reached
        // through the kernel's own pairing or keys.
        ctx.console.status("security level (BT_SECURITY): \(channel.securityLevel.map { "\($0)" } ?? "unknown")")
        do {
            try await L2CAPCopy.run(ctx, channel, idle: options.idle)
        } catch {
            channel.close()
            link?.close()
            throw error
        }
        link?.close()
    }

    /// DEVICE's address: as given, or found by scanning on the raw channel (CAP_NET_RAW).
    static func address(_ ctx: CommandContext, _ options: L2CAPOptions) async throws -> LEAddress {
        if case .address(let a) = options.target { return a }
        return try await withCentral(ctx) { central in
            try await DeviceResolver.resolve(options.target, central: central, scanTimeout: options.scanTimeout, console: ctx.console)
        }
    }

    /// The first channel `peer` opens to the listener within `limit`; channels other devices
    /// open meanwhile are closed.
    static func accept(_ ctx: CommandContext, _ listener: L2CAPSocketListener, from peer: LEAddress, psm: UInt16,
                       adapter: Int, within limit: Duration) async throws -> L2CAPSocketChannel {
        let deadline = ContinuousClock.now + limit
        while true {
            let channel: L2CAPSocketChannel
            do throws(L2CAPSocketError) {
                channel = try await listener.accept(timeout: max(.zero, deadline - .now))
            } catch .acceptTimeout {
                let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
                throw CLIFailure("\(peer) opened no channel to PSM 0x\(hex(psm, width: 4)) within \(formatSeconds(seconds)) s; check that the device knows this PSM and opens channels to it, or raise --timeout")
            } catch {
                throw failure(error, adapter: adapter)
            }
            if channel.peer.address == peer.address { return channel }
            ctx.console.status("closed the channel \(channel.peer) opened to PSM 0x\(hex(psm, width: 4)): waiting for \(peer)")
            channel.close()
        }
    }

    /// The kernel's error as one line; for the adapter itself, what to do with `ble`.
    static func failure(_ error: L2CAPSocketError, adapter: Int) -> CLIFailure {
        switch error {
        case .noAdapter(let peer, let err):
            return CLIFailure("hci\(adapter) cannot reach \(peer) (\(errnoName(err))): -d hci-raw:\(adapter) uses the kernel's L2CAP sockets, which need the kernel to own the adapter powered on; bring it up with 'ble adapters --up hci\(adapter)' (or start bluetoothd), or use -d hci\(adapter) with the adapter down for the stack's own channels")
        case .noSuchAdapter:
            return CLIFailure("\(error); list them with 'ble adapters' and name one with -d hci-raw:N")
        case .securityNotReached(let peer, let requested, let reached) where reached == nil || reached == SecurityLevel.none:
            // The kernel did not pair at all: what bluetoothd sets up for it is missing.
            return CLIFailure("the link to \(peer) stayed at security level '\(reached.map { "\($0)" } ?? "unknown")' while --security asked for '\(requested)': with -d hci-raw:\(adapter) the kernel pairs, on LE only if LE was enabled through its management interface before hci\(adapter) was powered on and an agent confirms the pairing, as bluetoothd does; start bluetoothd, or let this program pair with -d hci\(adapter) and the adapter down ('ble adapters --down hci\(adapter)')")
        default:
            return CLIFailure("\(error)")
        }
    }
}
