/// `ble l2cap`: present so scripts get a clear answer, not "unknown command".
enum NotImplementedCommands {
    static let l2cap = CommandSpec(
        name: "l2cap",
        summary: "open an L2CAP connection-oriented channel (not implemented yet)",
        usage: ["l2cap DEVICE --psm PSM"],
        options: [.value("psm", nil, "PSM", "LE_PSM of the channel")],
        details: ["L2CAP LE credit-based connection-oriented channels are not implemented yet: this command exits with status 1."],
        examples: [("ble l2cap F0:5E:B1:00:00:01 --psm 0x0080", "fails: L2CAP channels are not implemented yet")],
        run: { _ in
            throw CLIFailure("L2CAP connection-oriented channels are not implemented yet; only the fixed ATT channel is available (ble read / ble write)")
        })
}
