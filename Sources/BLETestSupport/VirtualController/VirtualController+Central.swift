import BLECore

extension VirtualController {
    /// A central on a fresh transport of this controller with `centralOptions()` (changed by
    /// `configure`), powered on: where most tests on the virtual controller start.
    ///
    ///     let central = try await vc.poweredOnCentral { $0.commandTimeout = .seconds(5) }
    package func poweredOnCentral(_ configure: (inout Central.Options) -> Void = { _ in }) async throws -> Central {
        var options = centralOptions()
        configure(&options)
        let central = Central(transport: makeTransport(), options: options)
        try await central.powerOn()
        return central
    }
}
