import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A Bumble virtual radio in a child process: one virtual controller reachable as H4 over
/// TCP on 127.0.0.1, with simulated peripherals from a scenario in `Fixtures/peers/scenarios/`.
///
///     try await VirtualRadio.with(scenario: "heart-rate") { radio in
///         let transport = radio.transportSpec          // "tcp:127.0.0.1:40123"
///         let hrm = radio.devices[0].address           // "F0:5E:B1:00:00:01"
///     }
///
/// The radio dies with the test process (it exits when its stdin closes). Each radio has its
/// own link and controller state, so every test should start its own.
public final class VirtualRadio: Sendable {
    /// A simulated peripheral, as announced in the radio's ready line.
    public struct Device: Sendable, Hashable, Decodable {
        /// Scenario id (with "-N" appended for copies).
        public let id: String
        /// Advertised Complete Local Name.
        public let name: String
        /// Address, most significant byte first: "F0:5E:B1:00:00:01".
        public let address: String
        /// "random" (random static) for every simulated peripheral.
        public let addressType: String
    }

    /// TCP port of the H4 endpoint on 127.0.0.1.
    public let port: Int
    /// The transport spec string for this radio: "tcp:127.0.0.1:PORT".
    public var transportSpec: String { "tcp:127.0.0.1:\(port)" }
    /// Simulated peripherals, in scenario order.
    public let devices: [Device]
    /// Public address of the controller the host stack talks to (HCI Read BD_ADDR).
    public let hostAddress: String?
    /// Process id of the radio.
    public let processIdentifier: Int32

    private let process: Process
    private let output: VirtualRadioOutput
    private let exited: DispatchGroup
    private let stdinPipe: Pipe

    /// The radio's recent stderr (its log), for diagnostics in failing tests.
    public var recentLog: String { output.stderrTail }

    private init(
        ready: VirtualRadioReadyLine, process: Process, output: VirtualRadioOutput,
        exited: DispatchGroup, stdinPipe: Pipe
    ) {
        port = ready.port
        devices = ready.devices
        hostAddress = ready.hostAddress
        processIdentifier = process.processIdentifier
        self.process = process
        self.output = output
        self.exited = exited
        self.stdinPipe = stdinPipe
    }

    deinit { stop() }

    /// The peripheral with the given scenario id.
    public func device(_ id: String) -> Device? { devices.first { $0.id == id } }

    /// Starts a radio and waits for its ready line.
    ///
    ///     let radio = try await VirtualRadio.start(scenario: "heart-rate")
    ///     defer { radio.stop() }
    ///
    /// - Parameters:
    ///   - scenario: a bundled scenario name ("heart-rate", "lab", "many", "links", "flaky", "all") or
    ///     a path to a scenario JSON file.
    ///   - port: TCP port on 127.0.0.1; 0 lets the radio pick a free one.
    ///   - timeout: how long to wait for the ready line.
    /// - Throws: `VirtualRadioError`.
    public static func start(
        scenario: String, port: Int = 0, timeout: Duration = .seconds(30)
    ) async throws -> VirtualRadio {
        let python = try VirtualRadioPaths.python()
        let script = try VirtualRadioPaths.script()
        let scenarioPath = try VirtualRadioPaths.scenario(scenario)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [
            script, "--scenario", scenarioPath, "--port", String(port), "--exit-on-stdin-eof",
        ]
        let stdinPipe = Pipe()
        let stdoutPipe = Pipe()
        let stderrPipe = Pipe()
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        // Radios started later must not inherit this one's stdin, or it would outlive us.
        _ = fcntl(stdinPipe.fileHandleForWriting.fileDescriptor, F_SETFD, FD_CLOEXEC)

        let output = VirtualRadioOutput()
        let exited = DispatchGroup()
        exited.enter()
        process.terminationHandler = { finished in
            output.processDidTerminate(status: finished.terminationStatus)
            exited.leave()
        }
        do {
            try process.run()
        } catch {
            exited.leave()
            throw VirtualRadioError.launchFailed(executable: python, detail: "\(error)")
        }
        output.attach(stdout: stdoutPipe.fileHandleForReading, stderr: stderrPipe.fileHandleForReading)
        // The child holds its own copies of these ends now.
        try? stdoutPipe.fileHandleForWriting.close()
        try? stderrPipe.fileHandleForWriting.close()
        try? stdinPipe.fileHandleForReading.close()

        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.timeInterval) {
            output.timeOut(after: timeout)
        }
        do {
            let ready = try await output.ready()
            return VirtualRadio(ready: ready, process: process, output: output, exited: exited, stdinPipe: stdinPipe)
        } catch {
            terminate(process, exited: exited)
            try? stdinPipe.fileHandleForWriting.close()
            throw error
        }
    }

    /// Starts a radio, runs `body`, and stops the radio afterwards, also when `body` throws.
    ///
    ///     let name = try await VirtualRadio.with(scenario: "lab") { $0.devices[0].name }
    public static func with<T>(
        scenario: String, port: Int = 0, timeout: Duration = .seconds(30),
        isolation: isolated (any Actor)? = #isolation,
        _ body: (VirtualRadio) async throws -> sending T
    ) async throws -> sending T {
        let radio = try await start(scenario: scenario, port: port, timeout: timeout)
        do {
            let result = try await body(radio)
            radio.stop()
            return result
        } catch {
            radio.stop()
            throw error
        }
    }

    /// Sends one command line to the radio's stdin (Fixtures/peers/README.md): for example
    /// `passkey keyboard 123456` has device "keyboard" type the passkey the central shows.
    ///
    ///     radio.send("passkey keyboard 123456")
    public func send(_ line: String) {
        try? stdinPipe.fileHandleForWriting.write(contentsOf: Array((line + "\n").utf8))
    }

    /// Stops the radio: SIGTERM, up to 2 s for it to exit, then SIGKILL. Returns once the
    /// process is gone. Safe to call more than once.
    public func stop() {
        Self.terminate(process, exited: exited)
        try? stdinPipe.fileHandleForWriting.close()
    }

    /// Kills the radio at once with SIGKILL (a crashed peer, for fault tests) and returns
    /// once the process is gone.
    public func kill() {
        if exited.wait(timeout: .now()) == .timedOut {
            _ = Glibc.kill(processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 2)
        }
        try? stdinPipe.fileHandleForWriting.close()
    }

    private static func terminate(_ process: Process, exited: DispatchGroup) {
        guard exited.wait(timeout: .now()) == .timedOut else { return }
        let pid = process.processIdentifier
        _ = Glibc.kill(pid, SIGTERM)
        if exited.wait(timeout: .now() + 2) == .timedOut {
            _ = Glibc.kill(pid, SIGKILL)
            _ = exited.wait(timeout: .now() + 2)
        }
    }
}

extension Duration {
    /// Seconds as a floating-point number.
    fileprivate var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
