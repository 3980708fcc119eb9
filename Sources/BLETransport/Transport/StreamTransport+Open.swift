#if canImport(Glibc)
import Glibc
#endif
import CHCI
import BLEWire

extension StreamTransport {
    /// Connects to an H4 endpoint over TCP (an emulator, a controller bridge).
    ///
    ///     let t = try StreamTransport.connect(host: "127.0.0.1", port: 9000)
    public static func connect(host: String, port: UInt16, timeoutMilliseconds: Int32 = 5000) throws(TransportError) -> StreamTransport {
        let endpoint = TransportSpec.tcp(host: host, port: port).description
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let detail = rc == EAI_SYSTEM ? errnoName(errno) : String(cString: gai_strerror(rc))
            throw .unreachable(endpoint: endpoint, detail: "cannot resolve host \"\(host)\" (\(detail))")
        }
        defer { freeaddrinfo(list) }
        var lastError: TransportError = .unreachable(endpoint: endpoint, detail: "no address for \"\(host)\"")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let ai = entry {
            entry = ai.pointee.ai_next
            do {
                let fd = try connectSocket(family: ai.pointee.ai_family, address: ai.pointee.ai_addr, length: ai.pointee.ai_addrlen,
                                           endpoint: endpoint, timeoutMilliseconds: timeoutMilliseconds)
                var one: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return StreamTransport(fd: fd, name: endpoint, isSocket: true)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// Connects to an H4 endpoint on a unix stream socket.
    ///
    ///     let t = try StreamTransport.connect(unixPath: "/tmp/controller.sock")
    public static func connect(unixPath path: String, timeoutMilliseconds: Int32 = 5000) throws(TransportError) -> StreamTransport {
        let endpoint = TransportSpec.unix(path: path).description
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let utf8 = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !utf8.isEmpty, utf8.count < capacity else {
            throw .invalidSpec(endpoint, reason: "a unix socket path holds 1 to \(capacity - 1) bytes, this one has \(utf8.count)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: utf8)
        }
        let fd = try withUnsafePointer(to: &address) { (p) throws(TransportError) -> Int32 in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa) throws(TransportError) -> Int32 in
                try connectSocket(family: AF_UNIX, address: sa, length: socklen_t(MemoryLayout<sockaddr_un>.size),
                                  endpoint: endpoint, timeoutMilliseconds: timeoutMilliseconds)
            }
        }
        return StreamTransport(fd: fd, name: endpoint, isSocket: true)
    }

    /// Non-blocking connect bounded by a timeout. Returns the connected non-blocking fd.
    private static func connectSocket(family: Int32, address: UnsafePointer<sockaddr>?, length: socklen_t,
                                      endpoint: String, timeoutMilliseconds: Int32) throws(TransportError) -> Int32 {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = socket(family, type, 0)
        if fd < 0 { throw .system(operation: "socket", endpoint: endpoint, errno: errno) }
        var err: Int32 = 0
        if Glibc.connect(fd, address, length) < 0 {
            err = errno
            if err == EINPROGRESS || err == EINTR {
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                var ready: Int32
                repeat { ready = poll(&pfd, 1, timeoutMilliseconds) } while ready < 0 && errno == EINTR
                if ready == 0 {
                    _ = Glibc.close(fd)
                    throw .unreachable(endpoint: endpoint, detail: "no answer within \(timeoutMilliseconds) ms (connect timed out)")
                }
                var soError: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                err = ready < 0 ? errno : (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &size) < 0 ? errno : soError)
            }
        }
        guard err != 0 else { return fd }
        _ = Glibc.close(fd)
        switch err {
        case ECONNREFUSED:
            throw .connectionRefused(endpoint: endpoint)
        case ENOENT:
            throw .unreachable(endpoint: endpoint, detail: "no socket at that path (ENOENT); start the controller or emulator first")
        case EAGAIN:
            throw .unreachable(endpoint: endpoint, detail: "the listener's backlog is full (EAGAIN)")
        case ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, EHOSTDOWN, ENETDOWN:
            throw .unreachable(endpoint: endpoint, detail: errnoName(err))
        case EACCES, EPERM:
            throw .unreachable(endpoint: endpoint, detail: "permission denied (\(errnoName(err)))")
        default:
            throw .system(operation: "connect", endpoint: endpoint, errno: err)
        }
    }

    /// Opens a UART in raw mode for H4 (8N1, optional RTS/CTS flow control).
    ///
    ///     let t = try StreamTransport.openSerial(path: "/dev/ttyUSB0", baud: 1_000_000, rtscts: true)
    public static func openSerial(path: String, baud: Int = TransportSpec.defaultBaud, rtscts: Bool = false) throws(TransportError) -> StreamTransport {
        let endpoint = TransportSpec.serial(path: path, baud: baud, rtscts: rtscts).description
        guard let speed = TransportSpec.speed(forBaud: baud) else {
            throw .invalidSpec(endpoint, reason: "baud rate \(baud) is not one of \(TransportSpec.standardBauds.map(String.init).joined(separator: ", "))")
        }
        let fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 {
            let err = errno
            switch err {
            case ENOENT, ENXIO, ENODEV: throw .noSuchSerialDevice(path: path)
            case EACCES, EPERM: throw .serialAccessDenied(path: path, errno: err)
            case EBUSY: throw .busy(device: path)
            default: throw .system(operation: "open serial device", endpoint: endpoint, errno: err)
            }
        }
        if chci_serial_configure(fd, speed, rtscts ? 1 : 0) < 0 {
            let err = errno
            _ = Glibc.close(fd)
            if err == ENOTTY {
                throw .system(operation: "configure serial port (\(path) is not a terminal device)", endpoint: endpoint, errno: err)
            }
            throw .system(operation: "configure serial port (termios)", endpoint: endpoint, errno: err)
        }
        return StreamTransport(fd: fd, name: endpoint, isSocket: false)
    }

    /// Creates a pseudo-terminal; another program attaches to `ptyPath` and speaks H4 there.
    ///
    ///     let t = try StreamTransport.openPTY()
    ///     print("attach with: btattach -B \(t.ptyPath!) -P h4")
    public static func openPTY() throws(TransportError) -> StreamTransport {
        var path = [CChar](repeating: 0, count: 64)
        var slave: Int32 = -1
        let master = chci_open_pty(&path, path.count, &slave)
        if master < 0 { throw .system(operation: "open pseudo-terminal (/dev/ptmx)", endpoint: "pty", errno: errno) }
        let slavePath = String(decoding: path.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return StreamTransport(fd: master, name: "pty:\(slavePath)", isSocket: false, ptyPath: slavePath, ptySlaveFD: slave)
    }

    /// Two connected ends of an H4 byte stream (a unix socket pair): what one sends, the
    /// other reads and frames. For running a controller in the same process over real bytes.
    ///
    ///     let (host, controller) = try StreamTransport.socketPair(name: "in-process")
    public static func socketPair(name: String) throws(TransportError) -> (StreamTransport, StreamTransport) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw .system(operation: "socketpair(AF_UNIX, SOCK_STREAM)", endpoint: name, errno: errno)
        }
        return (StreamTransport(fd: fds[0], name: "\(name) (host end)", isSocket: true),
                StreamTransport(fd: fds[1], name: "\(name) (controller end)", isSocket: true))
    }
}
