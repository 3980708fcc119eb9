import BLETestSupport
import Foundation
import Glibc
import Testing

/// `ChildProcess`, which starts the brokers, gateways and VMs of the tests and benchmarks.
@Suite("Child processes", .timeLimit(.minutes(1)))
struct ChildProcessTests {
    @Test("A child carries SIGKILL as its parent-death signal, so it ends when the test run dies")
    func childDiesWithTheRun() throws {
        try #require(ChildProcess.lifeline != nil, "util-linux's setpriv is missing")
        // setpriv --dump prints the state of its own process: the child's, after our start.
        let child = try ChildProcess(path: "/usr/bin/setpriv", ["--dump"], stdout: .pipe)
        let output = FileHandle(fileDescriptor: try #require(child.pipe), closeOnDealloc: true)
        let dump = String(decoding: try output.readToEnd() ?? Data(), as: UTF8.self)
        #expect(ChildProcess.wait(child.pid) == 0)
        #expect(dump.split(separator: "\n").contains("Parent death signal: KILL"))
    }

    @Test("A child started from a thread that then ends lives on until it is stopped")
    func childOutlivesTheThreadThatStartedIt() throws {
        final class Started: @unchecked Sendable { // written by the thread before pthread_join returns, read after
            var result: Result<ChildProcess, ChildProcessError>?
        }
        let started = Started()
        var thread = pthread_t()
        let box = Unmanaged.passRetained(started).toOpaque()
        #expect(pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            let started = Unmanaged<Started>.fromOpaque(raw).takeRetainedValue()
            started.result = Result { () throws(ChildProcessError) in
                let child = try ChildProcess(path: "/bin/sh", ["-c", "echo started; exec sleep 30"], stdout: .pipe)
                // The thread ends only once the child runs (its parent-death signal is set by then).
                var byte: UInt8 = 0
                _ = read(child.pipe ?? -1, &byte, 1)
                return child
            }
            return nil
        }, box) == 0)
        #expect(pthread_join(thread, nil) == 0)
        let child = try #require(started.result).get()
        defer { if let pipe = child.pipe { close(pipe) } }
        // SIGKILL from a parent-death signal would give 128 + 9; our SIGTERM gives 128 + 15.
        #expect(child.stop() == 128 + SIGTERM)
    }
}
