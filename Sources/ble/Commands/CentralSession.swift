import BLECore
import BLETransport

/// Opens the controller named by `-d` (teeing into `--btsnoop` when asked), brings it up,
/// runs `body`, and closes the central afterwards whatever happened (links disconnected,
/// scans stopped, capture flushed). After Ctrl-C the command's task is cancelled; close
/// still sends HCI_Disconnect for every link, so none is left up on the controller.
/// `reopenable`: the central opens the transport itself and can open it again
/// (`Central.reopen`) after the adapter went away; a `--btsnoop` capture starts over then.
/// Its command reports the loss itself, so the host's own error line for it is left out.
func withCentral<T: Sendable>(_ ctx: CommandContext, reopenable: Bool = false, _ body: (Central) async throws -> T) async throws -> T {
    let spec = try TransportSpec.parse(ctx.globals.device)
    let btsnoop = ctx.globals.btsnoop, logger = ctx.logger
    let open = { @Sendable () throws(TransportError) -> any HCITransport in
        let transport = try spec.open()
        guard let path = btsnoop else { return transport }
        do throws(TransportError) {
            return try SnoopingTransport(wrapping: transport, path: path, logger: logger)
        } catch {
            transport.close()
            throw error
        }
    }
    var options = Central.Options()
    options.logger = reopenable ? ctx.reopeningLogger : ctx.logger
    options.commandTimeout = min(ctx.globals.timeoutDuration, .seconds(10))
    if case .hciRaw = spec { options.resetController = false }
    let central = reopenable ? Central(opening: open, name: ctx.globals.device, options: options)
        : Central(transport: try open(), options: options)
    do {
        try await withTimeout(ctx.globals.timeoutDuration, "waiting for the controller at \(spec) to come up") {
            _ = try await central.powerOn()
        }
        ctx.logger.log(.info, "controller \(spec) is up")
        let result = try await body(central)
        await central.close()
        return result
    } catch {
        await central.close()
        throw error
    }
}
