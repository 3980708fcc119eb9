import Dispatch
import ATT
import GATTServer
import BLEWire
import BLETransport

/// A `GATTServer` with scripted answers in front: reads and writes of chosen value handles
/// fail with an ATT error, or a write's answer is decided by a closure. Everything else goes
/// to the server unchanged. Called by the virtual controller on its queue.
final class ScriptedATTServer: SimulatedATTServer {
    let server: GATTServer
    let queue: DispatchQueue
    private let onQueueKey = DispatchSpecificKey<Bool>()

    struct Scripts {
        var readErrors: [UInt16: ATTErrorCode] = [:]
        var writeAnswers: [UInt16: @Sendable ([UInt8]) -> ATTErrorCode?] = [:]
    }
    private let scripts: QueueConfined<Scripts>

    init(server: GATTServer) {
        self.server = server
        self.queue = server.queue
        scripts = QueueConfined(Scripts(), on: server.queue)
        queue.setSpecific(key: onQueueKey, value: true)
    }

    func update(_ change: (inout Scripts) -> Void) {
        if DispatchQueue.getSpecific(key: onQueueKey) == true { return change(&scripts.value) }
        queue.sync { change(&scripts.value) }
    }

    func linkConnected(_ link: any ATTServerLink) { server.linkConnected(link) }
    func linkDisconnected(_ link: any ATTServerLink) { server.linkDisconnected(link) }

    func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        guard pdu.count >= 3 else { return server.receive(pdu, from: link) }
        let opcode = ATTOpcode(pdu[0])
        let handle = UInt16(pdu[1]) | UInt16(pdu[2]) << 8
        switch opcode {
        case .readRequest, .readBlobRequest:
            if let error = scripts.value.readErrors[handle] {
                return link.sendToCentral(ATTPDU.errorResponse(request: opcode, handle: handle, error: error).bytes)
            }
        case .writeRequest:
            if let answer = scripts.value.writeAnswers[handle], let error = answer(Array(pdu.dropFirst(3))) {
                return link.sendToCentral(ATTPDU.errorResponse(request: opcode, handle: handle, error: error).bytes)
            }
        default:
            break
        }
        server.receive(pdu, from: link)
    }
}
