import BLECore
import Dispatch
import Glibc
import Synchronization
import BLETransport
import BLEWire

/// What `ble l2cap`'s copy reads of a channel beyond `ConnectionOrientedChannel`: the stack's
/// own channels count K-frames and waits for credits; the kernel does both out of sight.
protocol CopiedChannel: ConnectionOrientedChannel {
    /// K-frames received so far, so that the idle wait does not end inside a long SDU; nil
    /// when the transport reassembles out of sight (then idle counts from the last SDU).
    var kFramesReceived: Int? { get async }
    /// Sends that waited for credits; nil when the transport does not say.
    var creditWaits: Int? { get async }
}

extension CreditBasedChannel: CopiedChannel {
    var kFramesReceived: Int? { framesReceived }
    var creditWaits: Int? { creditStalls }
}

extension L2CAPSocketChannel: CopiedChannel {
    var kFramesReceived: Int? { nil }
    var creditWaits: Int? { nil }
}

/// netcat over an L2CAP connection-oriented channel, whichever stack carries it.
enum L2CAPCopy {
    /// Copies stdin to the channel and the channel to stdout until stdin ended, everything
    /// was sent, and the peer closed or stayed quiet for `idle`; then closes the channel and
    /// writes the summary to stderr.
    static func run(_ ctx: CommandContext, _ channel: some CopiedChannel, idle: Duration) async throws {
        let start = ContinuousClock.now
        let stdinDone = Atomic<Bool>(false)
        let (input, room) = StandardInput.chunks(size: min(await channel.peerMTU, 65535))
        // Counted as they go, so a sender cancelled when the peer closes still reports what it sent.
        let sentSDUs = Atomic<Int>(0), sentBytes = Atomic<Int>(0)
        let sender = Task {
            for await chunk in input {
                room.signal()
                try await channel.send(chunk, timeout: .seconds(30))
                sentSDUs.add(1, ordering: .relaxed)
                sentBytes.add(chunk.count, ordering: .relaxed)
            }
            stdinDone.store(true, ordering: .sequentiallyConsistent)
        }
        var received = 0, bytesIn = 0
        var closedByPeer = false
        var framesSeen = await channel.kFramesReceived
        do {
            while true {
                do {
                    guard let sdu = try await channel.receive(timeout: idle) else {
                        closedByPeer = true
                        break
                    }
                    received += 1
                    bytesIn += sdu.count
                    // The idle time counts from the last K-frame, this SDU's.
                    framesSeen = await channel.kFramesReceived
                    if ctx.globals.json {
                        ctx.console.out(JSONValue.object([("time", .string(Clock.timestamp())), ("length", .int(sdu.count)), ("hex", .string(hexString(sdu)))]).text)
                    } else {
                        StandardOutput.write(sdu)
                    }
                } catch .receiveTimeout {
                    // Idle means no K-frame at all: a long SDU still arriving is not idle.
                    let frames = await channel.kFramesReceived
                    if stdinDone.load(ordering: .sequentiallyConsistent), frames == framesSeen { break }
                    framesSeen = frames
                }
            }
        } catch {
            sender.cancel()
            throw CLIFailure("\(error)")
        }
        if closedByPeer { sender.cancel() }
        _ = await sender.result
        let sent = sentSDUs.load(ordering: .relaxed), bytesOut = sentBytes.load(ordering: .relaxed)
        if !closedByPeer { await channel.close() }
        let elapsed = ContinuousClock.now - start
        let seconds = max(0.001, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        let rate = Double(bytesOut + bytesIn) / seconds / 1000
        let credits = await channel.creditWaits.map { "waited for credits \($0) times" } ?? "the kernel handled the credits"
        ctx.console.status("sent \(bytesOut) bytes in \(sent) SDUs, received \(bytesIn) bytes in \(received) SDUs in \(fixedDecimals(seconds, 2)) s (\(fixedDecimals(rate, 1)) kB/s); \(credits)\(closedByPeer ? "; the peer closed the channel" : "")")
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
        let err = DetachedThread.start {
            var buffer = [UInt8](repeating: 0, count: max(1, size))
            while true {
                room.wait()
                let read = try? buffer.withUnsafeMutableBytes { (raw) throws(SystemCallError) -> Int? in try FileDescriptorIO.read(0, into: raw) }
                guard let n = read ?? nil, n > 0 else { break }
                continuation.yield(Array(buffer[0..<n]))
            }
            continuation.finish()
        }
        // No thread (the process is at its limit): the channel sends nothing and ends.
        if err != 0 { continuation.finish() }
        return (stream, room)
    }
}

enum StandardOutput {
    static func write(_ bytes: [UInt8]) {
        do {
            try FileDescriptorIO.writeAll(1, bytes)
        } catch where error.errno == EPIPE {
            exit(141)
        } catch {
            // Standard output failed otherwise: nothing is left to report it on.
        }
    }
}
