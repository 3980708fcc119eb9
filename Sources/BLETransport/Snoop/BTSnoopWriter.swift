#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import BLEWire

/// Writes a btsnoop capture to a file as packets happen (used by the transport tee).
///
///     let writer = try BTSnoopWriter(path: "/tmp/session.btsnoop")
///     writer.write(packet, direction: .sent)      // from the adapter queue, never blocks on the disk
///     writer.close()                              // writes what is queued, then closes
///
/// Records are encoded where `write` is called and written by a queue of the writer's own,
/// so a slow disk never stalls the adapter queue. What waits to be written is bounded by
/// `maximumPendingBytes`: past it, records are dropped and counted (`droppedRecords`, and
/// the cumulative drops field of every later record, as btsnoop defines it), with one warning.
/// A failed write(2) (ENOSPC, EIO) cuts the file back to its last whole record and stops the
/// writer with a warning, so the capture on disk always reads to its end.
///
/// The file is opened without following a symbolic link (O_NOFOLLOW) and must be a regular
/// file: the tool may run as root, and a link planted at a predictable path must not make it
/// truncate another file.
public final class BTSnoopWriter: Sendable {
    public let path: String
    /// Bytes encoded but not written yet, beyond which records are dropped.
    public let maximumPendingBytes: Int
    public static let defaultMaximumPendingBytes = 4 * 1024 * 1024

    private let queue: DispatchQueue
    private let logger: BLELogger
    private let writeSyscall: @Sendable (Int32, UnsafeRawPointer, Int) -> Int
    private let pendingBytes = Atomic<Int>(0)
    private let dropped = Atomic<UInt32>(0)
    private let stopped = Atomic<Bool>(false)

    private let file: QueueConfined<File>

    /// What `queue` owns: the descriptor (-1 once closed or stopped), where the last whole
    /// record ends, the records written and why writing stopped.
    private struct File {
        var fd: Int32
        var wholeRecordsEnd: Int64 = 0
        var written = 0
        var stopReason: String?
    }

    /// Creates (truncates) the file and writes the header.
    public convenience init(path: String, maximumPendingBytes: Int = BTSnoopWriter.defaultMaximumPendingBytes,
                            logger: BLELogger = .standardError(label: "btsnoop")) throws(TransportError) {
        try self.init(path: path, maximumPendingBytes: maximumPendingBytes, logger: logger, write: { Glibc.write($0, $1, $2) })
    }

    /// The same with `write` standing in for write(2) (same arguments and result): a slow or
    /// failing disk, for benchmarks and tests.
    ///
    ///     let writer = try BTSnoopWriter(path: p, logger: .silent) { fd, buf, n in usleep(100); return Glibc.write(fd, buf, min(n, 64)) }
    @_spi(Internals) public convenience init(path: String, maximumPendingBytes: Int = BTSnoopWriter.defaultMaximumPendingBytes,
                                              logger: BLELogger,
                                              write: @escaping @Sendable (Int32, UnsafeRawPointer, Int) -> Int) throws(TransportError) {
        try self.init(path: path, maximumPendingBytes: maximumPendingBytes, logger: logger,
                      queue: DispatchQueue(label: "ble.btsnoop-writer"), write: write)
    }

    /// `queue` and `write` are seams for tests (a suspended queue, a failing disk).
    init(path: String, maximumPendingBytes: Int, logger: BLELogger, queue: DispatchQueue,
         write: @escaping @Sendable (Int32, UnsafeRawPointer, Int) -> Int) throws(TransportError) {
        self.path = path
        self.maximumPendingBytes = maximumPendingBytes
        self.logger = logger
        self.queue = queue
        self.writeSyscall = write
        // O_NONBLOCK: opening a FIFO without a reader fails at once (ENXIO) instead of hanging.
        let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o644)
        if fd < 0 {
            let e = errno
            throw .system(operation: e == ELOOP ? "open btsnoop file (it is a symbolic link, which is not followed)" : "open btsnoop file",
                          endpoint: path, errno: e)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            _ = Glibc.close(fd)
            throw .system(operation: "open btsnoop file (not a regular file; give a file path)", endpoint: path, errno: EINVAL)
        }
        guard ftruncate(fd, 0) == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw .system(operation: "truncate btsnoop file", endpoint: path, errno: e)
        }
        file = QueueConfined(File(fd: fd), on: queue)
        let header = BTSnoopEncoder.header
        pendingBytes.add(header.count, ordering: .relaxed)
        queue.async { self.writeRecord(header, counted: false) }
    }

    /// Records dropped because the writer was `maximumPendingBytes` behind.
    public var droppedRecords: Int { Int(dropped.load(ordering: .relaxed)) }

    /// Records written to the file so far, and why the writer stopped (nil while it runs).
    public var progress: (writtenRecords: Int, stopReason: String?) {
        queue.sync { (file.value.written, file.value.stopReason) }
    }

    /// Queues one record stamped now; drops it (counted) when too much is waiting.
    public func write(_ packet: HCIPacket, direction: PacketDirection) {
        guard !stopped.load(ordering: .relaxed) else { return }
        var out: [UInt8] = []
        out.reserveCapacity(packet.h4.count + 24)
        let record = BTSnoopRecord(direction: direction, timestamp: BTSnoopEncoder.now(), packet: packet,
                                   drops: dropped.load(ordering: .relaxed))
        BTSnoopEncoder.append(record, to: &out)
        let size = out.count
        if pendingBytes.add(size, ordering: .relaxed).newValue > maximumPendingBytes {
            pendingBytes.subtract(size, ordering: .relaxed)
            if dropped.add(1, ordering: .relaxed).oldValue == 0 {
                logger.log(.warning, "btsnoop writer for \(path) is more than \(maximumPendingBytes) bytes behind the disk: dropping records (counted in the capture's drops field)")
            }
            return
        }
        let bytes = out
        queue.async {
            self.writeRecord(bytes)
            self.pendingBytes.subtract(size, ordering: .relaxed)
        }
    }

    /// Writes one whole record, or cuts the file back to the last whole one and stops.
    private func writeRecord(_ bytes: [UInt8], counted: Bool = true) {
        let fd = file.value.fd
        guard fd >= 0 else { return }
        let failure: Int32? = bytes.withUnsafeBytes { buf in
            guard let base = buf.baseAddress else { return nil }
            var off = 0
            while off < buf.count {
                let n = writeSyscall(fd, base + off, buf.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if n == 0 { return EIO }
                off += n
            }
            return nil
        }
        if let failure {
            _ = ftruncate(fd, off_t(file.value.wholeRecordsEnd))
            let reason = "write failed with \(errnoName(failure)); the capture ends at its last whole record (\(file.value.written) records)"
            file.value.stopReason = reason
            logger.log(.warning, "btsnoop writer for \(path) stopped: \(reason)")
            stopped.store(true, ordering: .relaxed)
            _ = Glibc.close(fd)
            file.value.fd = -1
            return
        }
        file.value.wholeRecordsEnd += Int64(bytes.count)
        if counted { file.value.written += 1 }
    }

    /// Writes what is queued, then closes the file.
    public func close() {
        stopped.store(true, ordering: .relaxed)
        queue.sync {
            if file.value.fd >= 0 { _ = Glibc.close(file.value.fd); file.value.fd = -1 }
        }
    }

    deinit {
        // Every queued write holds the writer, so none is left: close on the queue, its owner.
        queue.async { [file] in
            if file.value.fd >= 0 { _ = Glibc.close(file.value.fd) }
        }
    }
}
