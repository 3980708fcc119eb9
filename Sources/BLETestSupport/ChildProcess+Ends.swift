#if canImport(Glibc)
import Glibc
#endif

/// The descriptors made for one child: each pipe's two ends, stdin's (the child's end, the
/// caller's end) and the pseudo-terminal's name. All are close-on-exec; posix_spawn's dup2
/// gives the child its own copies as fds 0-2.
struct ChildEnds: Sendable {
    var pipe: (read: Int32, write: Int32)?
    var secondPipe: (read: Int32, write: Int32)?
    /// `child` is -1 for a terminal, which the child opens by name.
    var input: (child: Int32, parent: Int32)?
    /// "/dev/pts/N" for `.terminal`.
    var terminalName: String?
}

/// Makes the ends a child needs and remembers each descriptor, so that a failure closes
/// them all and a started child leaves the caller only its own ends.
struct OpenedEnds {
    private var childSides: [Int32] = []
    private var callerSides: [Int32] = []

    /// Linux's TIOCSPTLCK and TIOCGPTN (_IOW/_IOR('T', 0x31/0x30, int)): the request numbers
    /// unlockpt and ptsname use, which the C importer does not show as constants.
    private static let unlockTerminal: UInt = 0x4004_5431
    private static let terminalNumber: UInt = 0x8004_5430

    mutating func make(stdin: ChildProcess.Input, outputs: [ChildProcess.Output], path: String) throws(ChildProcessError) -> ChildEnds {
        var ends = ChildEnds()
        if outputs.contains(.pipe) { ends.pipe = try output(path) }
        if outputs.contains(.secondPipe) { ends.secondPipe = try output(path) }
        switch stdin {
        case .null, .file: break
        case .pipe:
            let (read, write) = try pipe(path)
            childSides.append(read)
            callerSides.append(write)
            ends.input = (child: read, parent: write)
            try nonBlocking(write, path)
        case .terminal:
            let (master, name) = try terminal(path)
            ends.input = (child: -1, parent: master)
            ends.terminalName = name
        }
        return ends
    }

    /// After the spawn: the child holds its copies, so this process closes the child's ends
    /// (a reader then sees the end of the output once the child's copies close).
    mutating func closeChildSides() {
        for fd in childSides { close(fd) }
        childSides = []
        callerSides = []
    }

    mutating func closeAll() {
        for fd in childSides + callerSides { close(fd) }
        childSides = []
        callerSides = []
    }

    /// A close-on-exec pipe, so that another child started meanwhile does not hold the write
    /// end open (the reader would then not see the end of the output).
    private func pipe(_ path: String) throws(ChildProcessError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else { throw ChildProcessError(path: path, operation: "pipe", code: errno) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// A pipe for stdout or stderr: the child writes, the caller reads.
    private mutating func output(_ path: String) throws(ChildProcessError) -> (read: Int32, write: Int32) {
        let ends = try pipe(path)
        callerSides.append(ends.read)
        childSides.append(ends.write)
        return ends
    }

    private func nonBlocking(_ fd: Int32, _ path: String) throws(ChildProcessError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw ChildProcessError(path: path, operation: "fcntl O_NONBLOCK", code: errno)
        }
    }

    /// A new pseudo-terminal (posix_openpt, unlockpt, ptsname): its non-blocking master side
    /// and the name of the side the child opens.
    private mutating func terminal(_ path: String) throws(ChildProcessError) -> (master: Int32, name: String) {
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)
        guard master >= 0 else { throw ChildProcessError(path: path, operation: "open /dev/ptmx", code: errno) }
        callerSides.append(master)
        var unlock: Int32 = 0
        guard ioctl(master, Self.unlockTerminal, &unlock) == 0 else {
            throw ChildProcessError(path: path, operation: "unlock the pseudo-terminal", code: errno)
        }
        var number: UInt32 = 0
        guard ioctl(master, Self.terminalNumber, &number) == 0 else {
            throw ChildProcessError(path: path, operation: "read the pseudo-terminal's number", code: errno)
        }
        return (master, "/dev/pts/\(number)")
    }
}
