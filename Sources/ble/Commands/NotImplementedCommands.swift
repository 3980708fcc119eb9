/// `ble pair`: present so scripts get a clear answer, not "unknown command".
enum NotImplementedCommands {
    static let pair = CommandSpec(
        name: "pair",
        summary: "pair with a device (not implemented yet)",
        usage: ["pair DEVICE"],
        options: [],
        details: ["Pairing (the Security Manager Protocol, L2CAP CID 0x0006) is not implemented yet: this command exits with status 1."],
        examples: [("ble pair F0:5E:B1:00:00:01", "fails: pairing is not implemented yet")],
        run: { _ in
            throw CLIFailure("pairing is not implemented yet (no Security Manager in this stack); use bluetoothctl pair for now, or read characteristics that need no encryption")
        })
}
