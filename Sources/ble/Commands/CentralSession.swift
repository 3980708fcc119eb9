import BLECore

/// Opens the controller named by `-d` (teeing into `--btsnoop` when asked), brings it up,
/// runs `body`, and closes the central afterwards whatever happened (links disconnected,
/// scans stopped, capture flushed). After Ctrl-C the command's task is cancelled; close
/// still sends HCI_Disconnect for every link, so none is left up on the controller.
func withCentral<T: Sendable>(_ ctx: CommandContext, _ body: (Central) async throws -> T) async throws -> T {
    let spec = try TransportSpec.parse(ctx.globals.device)
    var transport = try spec.open()
    if let path = ctx.globals.btsnoop {
        do {
            transport = try SnoopingTransport(wrapping: transport, path: path, logger: ctx.logger)
        } catch {
            transport.close()
            throw error
        }
    }
    var options = Central.Options()
    options.logger = ctx.logger
    options.commandTimeout = min(ctx.globals.timeoutDuration, .seconds(10))
    if case .hciRaw = spec { options.resetController = false }
    let central = Central(transport: transport, options: options)
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
