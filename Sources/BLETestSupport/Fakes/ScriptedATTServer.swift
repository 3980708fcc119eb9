import Dispatch
import ATT
import GATTServer
import BLEWire

/// A `GATTServer` with scripted answers in front: reads and writes of chosen value handles
/// fail with an ATT error, or a write's answer is decided by a closure. Everything else goes
/// to the server unchanged. Called by the virtual controller on its queue.
final class ScriptedATTServer: SimulatedATTServer, @unchecked Sendable { // `scripts` is touched only on `queue`
    let server: GATTServer
    let queue: DispatchQueue
    private let onQueueKey = DispatchSpecificKey<Bool>()

    struct Scripts {
        var readErrors: [UInt16: ATTErrorCode] = [:]
        var writeAnswers: [UInt16: @Sendable ([UInt8]) -> ATTErrorCode?] = [:]
    }
    private var scripts = Scripts()

    init(server: GATTServer) {
        self.server = server
        self.queue = server.queue
        queue.setSpecific(key: onQueueKey, value: true)
    }

    func update(_ change: (inout Scripts) -> Void) {
        if DispatchQueue.getSpecific(key: onQueueKey) == true { return change(&scripts) }
        queue.sync { change(&scripts) }
    }

    func linkConnected(_ link: any ATTServerLink) { server.linkConnected(link) }
    func linkDisconnected(_ link: any ATTServerLink) { server.linkDisconnected(link) }

    func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        guard pdu.count >= 3 else { return server.receive(pdu, from: link) }
        let opcode = ATTOpcode(pdu[0])
        let handle = UInt16(pdu[1]) | UInt16(pdu[2]) << 8
        switch opcode {
        case .readRequest, .readBlobRequest:
            if let error = scripts.readErrors[handle] {
                return link.sendToCentral(ATTPDU.errorResponse(request: opcode, handle: handle, error: error).bytes)
            }
        case .writeRequest:
            if let answer = scripts.writeAnswers[handle], let error = answer(Array(pdu.dropFirst(3))) {
                return link.sendToCentral(ATTPDU.errorResponse(request: opcode, handle: handle, error: error).bytes)
            }
        default:
            break
        }
        server.receive(pdu, from: link)
    }
}
