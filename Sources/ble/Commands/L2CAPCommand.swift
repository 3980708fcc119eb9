import BLECore
import Foundation
import SMP
import Synchronization

/// `ble l2cap DEVICE --psm N`: netcat over an LE credit-based channel (Core Spec 5.4 Vol 3,
/// Part A, 10.1): stdin to the channel, the channel to stdout.
enum L2CAPCommand {
    static let spec = CommandSpec(
        name: "l2cap",
        summary: "open an L2CAP LE credit-based channel and copy stdin to it and it to stdout",
        usage: ["l2cap DEVICE --psm PSM [--mtu N] [--mps N] [--idle SECONDS] [--security LEVEL]", "l2cap DEVICE --listen PSM [--mtu N] [--idle SECONDS] [--security LEVEL]"],
        options: [
            .value("psm", nil, "PSM", "open a channel to this LE_PSM (decimal or 0x hex)"),
            .value("listen", nil, "PSM", "wait for the device to open a channel to this LE_PSM instead"),
            .value("mtu", nil, "N", "largest SDU this side accepts (23-65535; default 2048)"),
            .value("mps", nil, "N", "largest K-frame payload this side accepts (23-65533; default 247)"),
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
        ],
        examples: [
            ("ble l2cap F0:5E:B1:00:00:21 --psm 0x0080 --mtu 65535 < firmware.bin > echo.bin", "copy a file through an echo server"),
            ("ble l2cap F0:5E:B1:00:00:21 --psm 0x0080 --json --idle 5 < request.bin", "send a request and print each answer SDU as hex"),
            ("ble l2cap \"COC\" --listen 0x0081 --json < /dev/null", "wait for the device to open a channel and print its SDUs as hex"),
            ("ble l2cap F0:5E:B1:00:00:51 --psm 0x0091 --security authenticated < request.bin", "pair with MITM protection, then open a channel that needs it"),
        ],
        run: run)

    static func run(_ ctx: CommandContext) async throws {
        let target = try DeviceResolver.parse(try ctx.positionals(["DEVICE"])[0])
        let psm = try ctx.args.value("psm").map { v throws(UsageError) in try Values.integer(v, option: "--psm", as: UInt16.self) }
        let listen = try ctx.args.value("listen").map { v throws(UsageError) in try Values.integer(v, option: "--listen", as: UInt16.self) }
        guard (psm == nil) != (listen == nil) else { throw UsageError("give either --psm PSM (open a channel) or --listen PSM (accept one)") }
        let mtu = Int(try ctx.args.value("mtu").map { v throws(UsageError) in try Values.integer(v, option: "--mtu", as: UInt16.self) } ?? 2048)
        let mps = try ctx.args.value("mps").map { v throws(UsageError) in Int(try Values.integer(v, option: "--mps", as: UInt16.self)) }
        guard mtu >= 23 else { throw UsageError("--mtu must be at least 23 (Vol 3, Part A, 4.22)") }
        if let mps, !(23...65533).contains(mps) { throw UsageError("--mps must be from 23 to 65533 (Vol 3, Part A, 4.22)") }
        let idleSeconds = try ctx.args.value("idle").map { v throws(UsageError) in try Values.seconds(v, option: "--idle") } ?? 2
        let idle = Duration.milliseconds(Int64(idleSeconds * 1000))
        let scanTimeout = try DeviceArgument.scanTimeout(ctx)
        let required = try LinkSecurity.parse(ctx)
        try await withCentral(ctx) { central in
            let security = try await LinkSecurity(ctx, required: required, central: central)
            let peer = try await DeviceResolver.resolve(target, central: central, scanTimeout: scanTimeout, console: ctx.console)
            ctx.console.status("connecting to \(peer)...")
            let link = try await central.connect(peer, timeout: ctx.globals.timeoutDuration)
            try await security.apply(to: link)
            await security.install(on: link)
            let channel: CreditBasedChannel
            if let psm {
                do throws(L2CAPChannelError) {
                    channel = try await link.openL2CAPChannel(psm: psm, mtu: mtu, mps: mps, timeout: ctx.globals.timeoutDuration)
                } catch {
                    throw CLIFailure("\(error)")
                }
            } else {
                let listen = listen ?? 0
                let incoming = try await link.acceptL2CAPChannels(psm: listen, mtu: mtu, mps: mps, security: required ?? .none)
                ctx.console.status("waiting for \(peer) to open a channel to PSM 0x\(hex(listen, width: 4))...")
                channel = try await withTimeout(ctx.globals.timeoutDuration, "waiting for \(peer) to open a channel to PSM 0x\(hex(listen, width: 4))") {
                    var iterator = incoming.makeAsyncIterator()
                    guard let c = await iterator.next() else { throw CLIFailure("the link to \(peer) ended before it opened a channel") }
                    return c
                }
            }
            ctx.console.status("channel open: PSM 0x\(hex(channel.psm, width: 4)), CID 0x\(hex(channel.localCID, width: 4)) -> 0x\(hex(channel.remoteCID, width: 4)), peer MTU \(await channel.peerMTU) MPS \(await channel.peerMPS)")
            try await copy(ctx, channel, idle: idle)
            try? await link.disconnect(timeout: .seconds(2))
        }
    }

    /// Copies stdin to the channel and the channel to stdout until stdin ended, everything
    /// was sent, and the peer closed or stayed quiet for `idle`.
    static func copy(_ ctx: CommandContext, _ channel: CreditBasedChannel, idle: Duration) async throws {
        let start = ContinuousClock.now
        let stdinDone = Atomic<Bool>(false)
        let (input, room) = StandardInput.chunks(size: min(await channel.peerMTU, 65535))
        let sender = Task {
            var sdus = 0
            for await chunk in input {
                room.signal()
                try await channel.send(chunk, timeout: .seconds(30))
                sdus += 1
            }
            stdinDone.store(true, ordering: .sequentiallyConsistent)
            return sdus
        }
        var received = 0
        var closedByPeer = false
        var framesSeen = 0
        do {
            while true {
                do {
                    guard let sdu = try await channel.receive(timeout: idle) else {
                        closedByPeer = true
                        break
                    }
                    received += 1
                    // The idle time counts from the last K-frame, this SDU's.
                    framesSeen = await channel.framesReceived
                    if ctx.globals.json {
                        ctx.console.out(JSONValue.object([("time", .string(Clock.timestamp())), ("length", .int(sdu.count)), ("hex", .string(hexString(sdu)))]).text)
                    } else {
                        StandardOutput.write(sdu)
                    }
                } catch .receiveTimeout {
                    // Idle means no K-frame at all: a long SDU still arriving is not idle.
                    let frames = await channel.framesReceived
                    if stdinDone.load(ordering: .sequentiallyConsistent), frames == framesSeen { break }
                    framesSeen = frames
                }
            }
        } catch {
            sender.cancel()
            throw CLIFailure("\(error)")
        }
        if closedByPeer { sender.cancel() }
        let sent = (try? await sender.value) ?? 0
        if !closedByPeer { await channel.close() }
        let elapsed = ContinuousClock.now - start
        let seconds = max(0.001, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        let bytesOut = await channel.bytesSent, bytesIn = await channel.bytesReceived, stalls = await channel.creditStalls
        let rate = Double(bytesOut + bytesIn) / seconds / 1000
        ctx.console.status("sent \(bytesOut) bytes in \(sent) SDUs, received \(bytesIn) bytes in \(received) SDUs in \(String(format: "%.2f", seconds)) s (\(String(format: "%.1f", rate)) kB/s); waited for credits \(stalls) times\(closedByPeer ? "; the peer closed the channel" : "")")
    }
}

/// Standard input as chunks, read on a thread of its own so a blocking read never holds a
/// task's thread. At most four chunks wait: the reader blocks on `room` (which the consumer
/// signals for each chunk it takes), so stdin is read no faster than the channel sends.
enum StandardInput {
    static func chunks(size: Int) -> (AsyncStream<[UInt8]>, DispatchSemaphore) {
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        // Made at 0 and raised to 4: libdispatch traps when a semaphore is released below
        // its initial value, which the reader thread may leave it at.
        let room = DispatchSemaphore(value: 0)
        for _ in 0..<4 { room.signal() }
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: max(1, size))
            while true {
                room.wait()
                var n = 0
                repeat {
                    n = buffer.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress, $0.count) }
                } while n < 0 && errno == EINTR
                guard n > 0 else { break }
                continuation.yield(Array(buffer[0..<n]))
            }
            continuation.finish()
        }
        return (stream, room)
    }
}

enum StandardOutput {
    static func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buf in
            var offset = 0
            while offset < buf.count, let base = buf.baseAddress {
                let n = Glibc.write(1, base + offset, buf.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == EPIPE { exit(141) }
                    return
                }
                offset += n
            }
        }
    }
}
