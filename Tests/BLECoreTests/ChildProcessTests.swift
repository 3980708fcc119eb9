import BLETestSupport
import BLETransport
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

    /// Everything the child writes to `fd` until it closes it; closes `fd`.
    static func readToEnd(_ fd: Int32?) throws -> String {
        let fd = try #require(fd)
        defer { close(fd) }
        return String(decoding: try FileDescriptorIO.readAll(fd, atMost: 1 << 16), as: UTF8.self)
    }

    @Test("stdin as a pipe: what is sent reaches the child, closing it ends the child's input")
    func stdinPipe() async throws {
        let child = try ChildProcess(path: "/bin/cat", [], stdin: .pipe, stdout: .pipe)
        try child.send(Array("hello\n".utf8))
        close(try #require(child.input))
        #expect(try Self.readToEnd(child.pipe) == "hello\n")
        #expect(await child.exitStatus(killingAfter: .seconds(30)) == 0)
    }

    @Test("A child that does not read its stdin: a send that does not fit fails at once with EAGAIN, one to a child that ended with EPIPE")
    func sendDoesNotWait() async throws {
        let child = try ChildProcess(path: "/bin/sh", ["-c", "echo ready; exec sleep 30"], stdin: .pipe, stdout: .pipe)
        defer { if let input = child.input { close(input) } }
        let output = try #require(child.pipe)
        defer { close(output) }
        #expect(try FileDescriptorIO.readAll(output, atMost: 6) == Array("ready\n".utf8))
        let full = [UInt8](repeating: 0x41, count: 1 << 20) // more than a pipe holds (64 KiB by default)
        for _ in 0 ..< 2 {
            do {
                try child.send(full)
                Issue.record("1 MiB fitted in the pipe of a child that does not read")
            } catch {
                #expect(error.code == EAGAIN)
                #expect(error.description == "/bin/sh: write to stdin failed with errno \(EAGAIN) (Resource temporarily unavailable): the child does not read its stdin, whose pipe is full")
            }
        }
        #expect(child.stop() == 128 + SIGTERM)
        // The reader is gone: EPIPE, and no SIGPIPE ends this process.
        do {
            try child.send([0x0A])
            Issue.record("a send to a child that ended succeeded")
        } catch {
            #expect(error.code == EPIPE)
        }
    }

    @Test("stdout and stderr to two pipes are read apart")
    func twoPipes() async throws {
        let child = try ChildProcess(path: "/bin/sh", ["-c", "echo out; echo err >&2"], stdout: .pipe, stderr: .secondPipe)
        #expect(try Self.readToEnd(child.pipe) == "out\n")
        #expect(try Self.readToEnd(child.secondPipe) == "err\n")
        #expect(await child.exitStatus(killingAfter: .seconds(30)) == 0)
    }

    @Test("stdin as a pseudo-terminal: it is the controlling terminal of a session the child leads, in line mode with echo")
    func terminalIsControlling() async throws {
        // The shell is the child itself (setpriv executes it): its /proc stat gives its
        // session (field 6) and its controlling terminal (field 7, tty_nr).
        let child = try ChildProcess(path: "/bin/sh", ["-c", "cat /proc/$$/stat; readlink /proc/$$/fd/0"], stdin: .terminal, stdout: .pipe)
        let master = try #require(child.input)
        defer { close(master) }
        let name = try #require(child.terminalName)
        let lines = try Self.readToEnd(child.pipe).split(separator: "\n")
        #expect(await child.exitStatus(killingAfter: .seconds(30)) == 0)
        try #require(lines.count == 2)
        // Fields after the command name in parentheses: state, ppid, pgrp, session, tty_nr.
        let fields = lines[0].split(separator: ")").last?.split(separator: " ") ?? []
        try #require(fields.count > 4)
        #expect(Int32(fields[3]) == child.pid, "the child leads its session")
        #expect(Int32(fields[2]) == child.pid, "the child leads its process group")
        let number = try #require(Int(name.dropFirst("/dev/pts/".count)))
        // tty_nr: major in bits 8-19, minor's low 8 bits in 0-7, its high bits from 20;
        // Unix98 pseudo-terminal slaves have majors 136-143 (the kernel's devices.txt).
        let device = try #require(Int(fields[4]))
        #expect((device >> 8) & 0xFFF == 136 + number / 256 && device & 0xFF == number % 256, "tty_nr \(device) for \(name)")
        #expect(lines[1] == Substring(name))
        var modes = termios()
        #expect(tcgetattr(master, &modes) == 0)
        #expect(modes.c_lflag & tcflag_t(ICANON | ECHO | ISIG) == tcflag_t(ICANON | ECHO | ISIG))
    }

    @Test("Ctrl-C typed on the pseudo-terminal reaches the child as SIGINT")
    func ctrlCOnTheTerminal() async throws {
        let child = try ChildProcess(path: "/bin/sh", ["-c", "echo ready; exec sleep 30"], stdin: .terminal, stdout: .pipe)
        let master = try #require(child.input)
        defer { close(master) }
        let output = try #require(child.pipe)
        defer { close(output) }
        #expect(try FileDescriptorIO.readAll(output, atMost: 6) == Array("ready\n".utf8))
        try child.send([0x03]) // VINTR
        #expect(await child.exitStatus(killingAfter: .seconds(30)) == 128 + SIGINT)
    }

    @Test("A wait's bound: a child that outlives it is killed (status 137), as is one whose waiting task is cancelled")
    func boundedWaits() async throws {
        let slow = try ChildProcess(path: "/bin/sleep", ["30"])
        #expect(await slow.exitStatus(killingAfter: .milliseconds(100)) == 128 + SIGKILL)
        let abandoned = try ChildProcess(path: "/bin/sleep", ["30"])
        let waiting = Task { await abandoned.exitStatus(killingAfter: .seconds(60)) }
        waiting.cancel()
        #expect(await waiting.value == 128 + SIGKILL)
    }

    @Test("stop: SIGTERM, then SIGKILL once the bound passes for a child that ignores SIGTERM")
    func stopKillsAfterItsBound() async throws {
        let stubborn = try ChildProcess(path: "/bin/sh", ["-c", "trap '' TERM; echo ready; exec sleep 30"], stdout: .pipe)
        let output = try #require(stubborn.pipe)
        defer { close(output) }
        #expect(try FileDescriptorIO.readAll(output, atMost: 6) == Array("ready\n".utf8))
        #expect(stubborn.stop(killingAfter: .milliseconds(100)) == 128 + SIGKILL)
    }
}
