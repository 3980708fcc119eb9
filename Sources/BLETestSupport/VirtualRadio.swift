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

    private let process: ChildProcess
    private let watch: ExitWatch
    private let output: VirtualRadioOutput
    private let exited: DispatchGroup
    /// The write end of the radio's stdin, -1 once closed.
    private let input: Mutex<Int32>

    /// The radio's recent stderr (its log), for diagnostics in failing tests.
    public var recentLog: String { output.stderrTail }

    private init(
        ready: VirtualRadioReadyLine, process: ChildProcess, watch: ExitWatch, output: VirtualRadioOutput,
        exited: DispatchGroup
    ) {
        port = ready.port
        devices = ready.devices
        hostAddress = ready.hostAddress
        processIdentifier = watch.pid
        self.process = process
        self.watch = watch
        self.output = output
        self.exited = exited
        input = Mutex(process.input ?? -1)
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

        let process: ChildProcess
        do {
            // stdin is a pipe this process holds: the radio exits at its end of file, so it
            // dies with us; the ends are close-on-exec, so no later child inherits them.
            process = try ChildProcess(
                path: python, [script, "--scenario", scenarioPath, "--port", String(port), "--exit-on-stdin-eof"],
                stdin: .pipe, stdout: .pipe, stderr: .secondPipe)
        } catch {
            throw VirtualRadioError.launchFailed(executable: python, detail: "\(error)")
        }
        let output = VirtualRadioOutput()
        let exited = DispatchGroup()
        exited.enter()
        let watch = ExitWatch(process.pid)
        Thread.detachNewThread {
            output.processDidTerminate(status: watch.wait())
            exited.leave()
        }
        output.attach(stdout: FileHandle(fileDescriptor: process.pipe ?? -1), stderr: FileHandle(fileDescriptor: process.secondPipe ?? -1))

        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.timeInterval) {
            output.timeOut(after: timeout)
        }
        do {
            let ready = try await output.ready()
            return VirtualRadio(ready: ready, process: process, watch: watch, output: output, exited: exited)
        } catch {
            terminate(watch, exited: exited)
            if let input = process.input { close(input) }
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
        input.withLock { fd in
            guard fd >= 0 else { return }
            _ = try? process.send(Array((line + "\n").utf8))
        }
    }

    /// Stops the radio: SIGTERM, up to 2 s for it to exit, then SIGKILL. Returns once the
    /// process is gone. Safe to call more than once.
    public func stop() {
        Self.terminate(watch, exited: exited)
        closeInput()
    }

    /// Kills the radio at once with SIGKILL (a crashed peer, for fault tests) and returns
    /// once the process is gone.
    public func kill() {
        watch.send(SIGKILL)
        _ = exited.wait(timeout: .now() + 2)
        closeInput()
    }

    private func closeInput() {
        input.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    private static func terminate(_ watch: ExitWatch, exited: DispatchGroup) {
        watch.send(SIGTERM)
        if exited.wait(timeout: .now() + 2) == .timedOut {
            watch.send(SIGKILL)
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
