import BLECore
import BLETransport

/// The options of `ble l2cap`, checked before anything is opened (every mistake is a usage
/// error, exit status 2).
///
/// Which stack carries the channel follows from `-d`: on a kernel-owned adapter
/// (`hci-raw:N`, shared with the kernel) the kernel's L2CAP answers the peer's signaling on
/// every link, so the channel is the kernel's (`L2CAPSocketChannel`, SOCK_SEQPACKET on
/// adapter N); on every other controller (`hci0`/`hci-user:N` with the adapter down, H4
/// over tcp, unix, serial) it is the stack's own (`CreditBasedChannel` on the ACL path).
struct L2CAPOptions: Sendable {
    enum Mode: Sendable, Equatable {
        /// `--psm`: open a channel to the device's LE_PSM.
        case open(psm: UInt16)
        /// `--listen`: wait for the device to open a channel to this LE_PSM.
        case listen(psm: UInt16)
    }

    var target: DeviceResolver.Target
    var mode: Mode
    /// This side's MTU (23-65535).
    var mtu: Int
    /// This side's MPS on the stack's own channels; nil: the default (247).
    var mps: Int?
    var idle: Duration
    var scanTimeout: Duration
    var security: SecurityLevel?
    /// hciN when `-d hci-raw:N`: the kernel's sockets carry the channel.
    var kernelAdapter: Int?

    init(_ ctx: CommandContext) throws(UsageError) {
        target = try DeviceResolver.parse(try ctx.positionals(["DEVICE"])[0])
        let psm = try ctx.args.value("psm").map { v throws(UsageError) in try Values.integer(v, option: "--psm", as: UInt16.self) }
        let listen = try ctx.args.value("listen").map { v throws(UsageError) in try Values.integer(v, option: "--listen", as: UInt16.self) }
        switch (psm, listen) {
        case (let psm?, nil): mode = .open(psm: psm)
        case (nil, let listen?): mode = .listen(psm: listen)
        default: throw UsageError("give either --psm PSM (open a channel) or --listen PSM (accept one)")
        }
        mtu = Int(try ctx.args.value("mtu").map { v throws(UsageError) in try Values.integer(v, option: "--mtu", as: UInt16.self) } ?? 2048)
        mps = try ctx.args.value("mps").map { v throws(UsageError) in Int(try Values.integer(v, option: "--mps", as: UInt16.self)) }
        guard mtu >= 23 else { throw UsageError("--mtu must be at least 23 (Vol 3, Part A, 4.22)") }
        if let mps, !(23...65533).contains(mps) { throw UsageError("--mps must be from 23 to 65533 (Vol 3, Part A, 4.22)") }
        let idleSeconds = try ctx.args.value("idle").map { v throws(UsageError) in try Values.seconds(v, option: "--idle") } ?? 2
        idle = .milliseconds(Int64(idleSeconds * 1000))
        scanTimeout = try DeviceArgument.scanTimeout(ctx)
        security = try LinkSecurity.parse(ctx)
        // A malformed -d is reported when the controller is opened, as by every command.
        if case .hciRaw(let index)? = try? TransportSpec.parse(ctx.globals.device) {
            kernelAdapter = index
            if mps != nil {
                throw UsageError("--mps is for the stack's own channels; with -d hci-raw:\(index) the kernel's socket carries the channel and the kernel chooses the MPS (from the controller's buffers): leave out --mps, or use -d hci\(index) with the adapter down")
            }
            if ctx.globals.btsnoop != nil {
                throw UsageError("with -d hci-raw:\(index) the kernel's socket carries the channel and this process sends no HCI packets for it; record hci\(index)'s traffic with 'ble monitor -i hci\(index) --btsnoop FILE' alongside, and leave out --btsnoop")
            }
        } else {
            kernelAdapter = nil
        }
    }
}
