#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import BLETransport

/// The bytes typed on stdin as they come, read when the descriptor is readable (a dispatch
/// read source, so the wait takes no thread and ends when the reader's task is cancelled).
/// The stream ends at the end of input, on a read error, or with `.idle` after `idle` passed
/// without a key.
///
///     for await input in TerminalKeys.stream(idle: .seconds(30)) { ... }
enum TerminalKeys {
    enum Input: Sendable, Equatable {
        case bytes([UInt8])
        /// Nothing was typed for the idle time.
        case idle
    }

    static func stream(idle: Duration) -> AsyncStream<Input> {
        let (stream, continuation) = AsyncStream.makeStream(of: Input.self)
        let queue = DispatchQueue(label: "ble-terminal-keys")
        let source = DispatchSource.makeReadSource(fileDescriptor: 0, queue: queue)
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let idleNanoseconds = Int(idle.components.seconds) * 1_000_000_000 + Int(idle.components.attoseconds / 1_000_000_000)
        source.setEventHandler {
            switch Result(catching: { () throws(SystemCallError) in try FileDescriptorIO.read(0, upTo: 64) }) {
            case .success(let bytes?) where !bytes.isEmpty:
                timer.schedule(deadline: .now() + .nanoseconds(idleNanoseconds))
                continuation.yield(.bytes(bytes))
            case .success(nil):
                break  // nothing to read yet
            case .success, .failure:
                continuation.finish()
            }
        }
        timer.setEventHandler {
            continuation.yield(.idle)
            continuation.finish()
        }
        // The read source and the idle timer, handed to the stream's end to cancel them there.
        let sources = QueueConfined((read: source, idle: timer), on: queue)
        continuation.onTermination = { _ in
            queue.async {
                sources.value.read.cancel()
                sources.value.idle.cancel()
            }
        }
        timer.schedule(deadline: .now() + .nanoseconds(idleNanoseconds))
        timer.resume()
        source.resume()
        return stream
    }
}
