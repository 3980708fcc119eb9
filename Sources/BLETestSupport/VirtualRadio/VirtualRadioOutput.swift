import Foundation
import Synchronization

/// The parsed ready line printed by `Fixtures/peers/virtual_radio.py`.
struct VirtualRadioReadyLine: Decodable, Sendable {
    let ready: Bool
    let port: Int
    let hostAddress: String?
    let devices: [VirtualRadio.Device]
}

/// Collects the radio's stdout (until the ready line) and the tail of its stderr, and
/// resolves the one wait for readiness: ready line, early exit or timeout, whichever is first.
///
/// A Mutex and not an actor: the pipes' reading threads and the process termination callback
/// must record their bytes synchronously, in order.
final class VirtualRadioOutput: Sendable {
    /// Bytes of stderr kept for error messages.
    static let stderrTailLimit = 8192

    private struct State {
        var stdout: [UInt8] = []
        var stderrTail: [UInt8] = []
        var terminationStatus: Int32?
        var stderrClosed = false
        var outcome: Result<VirtualRadioReadyLine, VirtualRadioError>?
        var waiter: CheckedContinuation<VirtualRadioReadyLine, any Error>?
    }

    private let state = Mutex(State())

    /// The last bytes the radio wrote to stderr, as text.
    var stderrTail: String {
        state.withLock { String(decoding: $0.stderrTail, as: UTF8.self) }
    }

    /// Starts draining both pipes (their read ends, taken over once the process runs).
    /// Draining continues for the life of the process so a chatty radio never blocks on a
    /// full pipe.
    func attach(stdout: FileHandle, stderr: FileHandle) {
        PipeReader.start(taking: stdout) { [self] bytes in receiveStdout(bytes) }
        PipeReader.start(taking: stderr) { [self] bytes in receiveStderr(bytes) } end: { [self] in stderrDidClose() }
    }

    private func receiveStdout(_ bytes: [UInt8]) {
        let line: [UInt8]? = state.withLock { s in
            guard s.outcome == nil else { return nil }
            s.stdout.append(contentsOf: bytes)
            guard let newline = s.stdout.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
            return Array(s.stdout[..<newline])
        }
        guard let line else { return }
        let tail = stderrTail
        do {
            let ready = try JSONDecoder().decode(VirtualRadioReadyLine.self, from: Data(line))
            guard ready.ready, ready.port > 0 else {
                resolve(.failure(.badReadyLine(String(decoding: line, as: UTF8.self), stderrTail: tail)))
                return
            }
            resolve(.success(ready))
        } catch {
            resolve(.failure(.badReadyLine(String(decoding: line, as: UTF8.self), stderrTail: tail)))
        }
    }

    private func receiveStderr(_ bytes: [UInt8]) {
        state.withLock { s in
            s.stderrTail.append(contentsOf: bytes)
            let excess = s.stderrTail.count - Self.stderrTailLimit
            if excess > 0 { s.stderrTail.removeFirst(excess) }
        }
    }

    /// Early exit is reported once both the process has ended and its stderr is drained,
    /// so the message carries the radio's last words.
    private func stderrDidClose() {
        let status: Int32? = state.withLock { s in
            s.stderrClosed = true
            return s.terminationStatus
        }
        if let status { resolve(.failure(.exitedEarly(status: status, stderrTail: stderrTail))) }
    }

    func processDidTerminate(status: Int32) {
        let closed = state.withLock { s in
            s.terminationStatus = status
            return s.stderrClosed
        }
        if closed { resolve(.failure(.exitedEarly(status: status, stderrTail: stderrTail))) }
    }

    func timeOut(after: Duration) {
        resolve(.failure(.timedOut(after: after, stderrTail: stderrTail)))
    }

    /// Records the first outcome; later ones are ignored.
    func resolve(_ outcome: Result<VirtualRadioReadyLine, VirtualRadioError>) {
        let waiter: CheckedContinuation<VirtualRadioReadyLine, any Error>? = state.withLock { s in
            guard s.outcome == nil else { return nil }
            s.outcome = outcome
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(with: outcome.mapError { $0 as any Error })
    }

    /// Waits for the first outcome; the cancellation of the waiting task is one
    /// (`VirtualRadioError.cancelled`).
    func ready() async throws -> VirtualRadioReadyLine {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let outcome: Result<VirtualRadioReadyLine, VirtualRadioError>? = state.withLock { s in
                    if let outcome = s.outcome { return outcome }
                    s.waiter = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome.mapError { $0 as any Error }) }
            }
        } onCancel: {
            resolve(.failure(.cancelled(stderrTail: stderrTail)))
        }
    }
}
