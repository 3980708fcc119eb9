import Foundation
import BLETransport

/// Reads a child's output to its end with blocking reads on a thread of its own, then closes
/// the descriptor. The tests and the virtual radio read every child this way, never through
/// `FileHandle.readabilityHandler`: on Linux that handler's dispatch source reads the handle's
/// descriptor, not the one it watches, and its teardown races the close inside libdispatch.
/// Either can end the whole test process (a trap in `availableData`, a crash in libdispatch).
///
///     let output = PipeReader.chunks(taking: pipe.fileHandleForReading)   // after process.run()
///     for await data in output { text += String(decoding: data, as: UTF8.self) }
public enum PipeReader {
    /// Calls `chunk` with the bytes of each read, in order, then `end` once at the end of the
    /// input (or on a read error), all on the reading thread. Owns `fd` and closes it.
    public static func start(
        _ fd: Int32, chunk: @escaping @Sendable ([UInt8]) -> Void, end: @escaping @Sendable () -> Void = {}
    ) {
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = try? buffer.withUnsafeMutableBytes { (raw) throws(SystemCallError) -> Int? in try FileDescriptorIO.read(fd, into: raw) }
                guard let count = count ?? nil, count > 0 else { break }
                chunk(Array(buffer[..<count]))
            }
            close(fd)
            end()
        }
    }

    /// The bytes of `handle` as chunks; the stream finishes at the end of the input. Takes
    /// over its descriptor (a pipe's read end, once the child is started): the handle is
    /// closed and a duplicate is read, so nothing else reads or closes it.
    public static func chunks(taking handle: FileHandle) -> AsyncStream<Data> {
        let (stream, feed) = AsyncStream<Data>.makeStream()
        start(taking: handle) { feed.yield(Data($0)) } end: { feed.finish() }
        return stream
    }

    /// `start(_:chunk:end:)` on the descriptor of `handle`, taken over as in `chunks(taking:)`.
    public static func start(
        taking handle: FileHandle, chunk: @escaping @Sendable ([UInt8]) -> Void, end: @escaping @Sendable () -> Void = {}
    ) {
        start(take(handle), chunk: chunk, end: end)
    }

    private static func take(_ handle: FileHandle) -> Int32 {
        let fd = dup(handle.fileDescriptor)
        try? handle.close()
        return fd
    }
}
