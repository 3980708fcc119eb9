import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

// Ctrl-C: SignalPipe cancels the running command, which stops its scan,
// disconnects its links and closes the central; the process then exits with 130. Should the
// cleanup hang, a second Ctrl-C or 5 s end the process anyway.
let environment = ProcessInfo.processInfo.environment
let console = Console(environment: environment)
let arguments = Array(CommandLine.arguments.dropFirst())

switch CLI.prepare(arguments, environment: environment, console: console) {
case .failure(let status):
    exit(status.code)
case .success(let context):
    let interrupts = Atomic<Int>(0)
    signal(SIGPIPE, SIG_IGN)
    let task = Task { await CLI.run(context, interrupted: { interrupts.load(ordering: .relaxed) > 0 }) }
    _ = SignalPipe.watch([SIGINT]) { _ in
        let n = interrupts.add(1, ordering: .relaxed).newValue
        if n > 1 { exit(CLI.ExitCode.interrupted) }
        console.status("interrupted: stopping")
        task.cancel()
        DispatchQueue.main.asyncAfter(deadline: .now() + 5) { exit(CLI.ExitCode.interrupted) }
    }
    Task {
        let code = await task.value
        exit(code)
    }
    dispatchMain()
}
