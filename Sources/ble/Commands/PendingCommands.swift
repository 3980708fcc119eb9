enum ScanCommand { static let spec = CommandSpec(name: "scan", summary: "", usage: ["scan"], options: [], examples: [], run: { _ in }) }
enum ConnectCommand { static let spec = CommandSpec(name: "connect", summary: "", usage: ["connect"], options: [], examples: [], run: { _ in }) }
enum InspectCommand { static let spec = CommandSpec(name: "inspect", summary: "", usage: ["inspect"], options: [], examples: [], run: { _ in }) }
enum ReadCommand { static let spec = CommandSpec(name: "read", summary: "", usage: ["read"], options: [], examples: [], run: { _ in }) }
enum WriteCommand { static let spec = CommandSpec(name: "write", summary: "", usage: ["write"], options: [], examples: [], run: { _ in }) }
