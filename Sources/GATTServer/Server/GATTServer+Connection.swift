import BLECore
import BLETransport
import Dispatch
import GATTClient
import SMP
import BLEWire
import ATT

extension GATTServer {
    /// Serves the database to the client at the other end of `connection` (a link a central
    /// opened to our advertising: `central.incomingConnections()`) over its ATT fixed channel
    /// (CID 0x0004). Returns once the bearer is attached; PDUs that arrived before are handled
    /// first, and the bearer ends with the link. Call it once per link: the server takes the
    /// link's ATT channel (a GATT client on the same link would need it too). Make the server
    /// on the adapter's queue (`central.executor.queue`) so a PDU is answered without a hop.
    ///
    ///
    /// With `bonds` (the store `Central.acceptPairing` saves in), a read or write refused for
    /// Insufficient Authentication, Insufficient Encryption or Encryption Key Size Too Short is
    /// followed by an SMP Security Request for the level the attribute needs (Vol 3, Part H,
    /// 2.4.6), and once the link is encrypted with a bond from the store the client is that
    /// bond's identity: its CCCDs of earlier links come back (Vol 3, Part G, 3.3.3.3) and its
    /// signed writes are verified (`setSignedWriteVerifier`). Without `bonds` the link is
    /// never asked for more security and never bonded.
    ///
    ///     let server = GATTServer(database: db, queue: central.executor.queue)
    ///     for await link in await central.incomingConnections() { try await server.serve(link) }
    public func serve(_ connection: Connection, bonds: (any BondStore)? = nil) async throws(ConnectionError) {
        let link = try await attach(connection, bonds: bonds)
        await acceptEnhancedBearers(connection, client: link, bonds: bonds)
        guard bonds != nil else { return }
        // The bond's state comes back when the link is encrypted, which is usually after the
        // bearer is attached: the central encrypts once connected. Followed until the link ends.
        let events = await connection.events(bufferingPolicy: .bufferingNewest(8))
        if await connection.securityLevel >= .encrypted { await onQueue { self.bondFound(link) } }
        Task { [weak self] in
            for await event in events {
                if case .disconnected = event { return }
                guard case .securityChanged(let level) = event, level >= .encrypted, let self else { continue }
                await self.onQueue { self.bondFound(link) }
            }
        }
    }

    /// Tells the server that pairing on `connection` saved a bond in the store given to
    /// `serve(_:bonds:)` (a first pairing encrypts the link before the keys are exchanged and
    /// the bond saved): the link becomes that bond's client, and the CCCDs it wrote are kept
    /// for its later links. Call it from `Central.acceptPairing`'s `onResult`.
    ///
    ///     await central.acceptPairing(store: bonds) { link, result in Task { await server.bondSaved(on: link) } }
    public func bondSaved(on connection: Connection) async {
        await onQueue {
            for state in self.links.values {
                if let link = state.link as? ConnectionATTLink, link.connection === connection { self.bondFound(link) }
            }
        }
    }

    /// Looks up the link's bond again and restores what the server kept of it (on the queue).
    private func bondFound(_ link: ConnectionATTLink) {
        restoreBondState(link, stored: link.lookUpBond())
    }

    /// What the server keeps of a bond its store brings: the CCCDs (those whose handle is a
    /// CCCD of this database), the Client Supported Features, and change-aware when the
    /// Database Hash it was aware of is this database's (or none was kept).
    func bondState(from stored: Bond) -> BondState {
        let cccd = stored.clientConfigurations.filter { entry in
            table.index(of: entry.key).map { if case .cccd = table.attributes[$0].kind { true } else { false } } ?? false
        }
        let saved = SavedClientState(cccd: stored.clientConfigurations, features: stored.clientSupportedFeatures, hash: stored.clientDatabaseHash)
        return BondState(cccd: cccd, clientFeatures: stored.clientSupportedFeatures & 0x07,
                         changeAware: stored.clientDatabaseHash.map { $0 == databaseHashValue } ?? true, saved: saved)
    }

    /// The Database Hash as a number (`Bond.clientDatabaseHash`).
    var databaseHashValue: UInt128 { UInt128(littleEndianBytes: table.hash) }

    /// Saves what the server keeps of a bonded client in the store of `link` (`serve(_:bonds:)`)
    /// when it changed since last saved, so it comes back after a restart: the CCCDs, the
    /// Client Supported Features, and the Database Hash while change-aware (0 while not). On
    /// the queue; the store is written off it, in order. A save that fails leaves the file as
    /// it was; the server still keeps the state while it runs.
    func saveClientState(of peer: LEAddress, link: any ATTServerLink) {
        guard let store = (link as? any ATTServerLinkBondStore)?.bondStore, let bond = bonds[peer] else { return }
        let record = SavedClientState(cccd: bond.cccd.filter { $0.value != 0 }, features: bond.clientFeatures,
                                      hash: bond.changeAware ? databaseHashValue : 0)
        guard bond.saved != record else { return }
        bonds[peer]?.saved = record
        bondWrites.async {
            do throws(BondStoreError) {
                // In one step with the store: a sign counter saved at the same time stays.
                _ = try store.update(peer) { stored in
                    guard SavedClientState(cccd: stored.clientConfigurations, features: stored.clientSupportedFeatures,
                                           hash: stored.clientDatabaseHash) != record else { return false }
                    stored.clientConfigurations = record.cccd
                    stored.clientSupportedFeatures = record.features
                    stored.clientDatabaseHash = record.hash
                    return true
                }
            } catch {
                self.queue.async { self.bondNotSaved(peer, error) }
            }
        }
    }

    /// A save of `peer`'s client state failed (on the queue): logged as a warning with the
    /// peer and the errno, reported to `activity()`, and saved again at the next change.
    private func bondNotSaved(_ peer: LEAddress, _ error: BondStoreError) {
        bonds[peer]?.saved = nil
        var metadata = ["peer": "\(peer)"]
        if case .io(_, _, let code) = error { metadata["errno"] = "\(code)" }
        logger.log(.warning, "the GATT server's state of bonded client \(peer) was not saved: \(error)", metadata: metadata)
        report(.bondNotSaved(peer: peer, error: error))
        hooks?.changed(self)
    }

    /// Accepts enhanced ATT bearers (EATT: L2CAP enhanced credit-based channels on PSM 0x0027,
    /// Vol 3, Part G, 5.3.2 and Part A, 4.25) until the link ends. Each is served from the
    /// same database with its own ATT_MTU, the smaller of both sides' L2CAP MTUs (Part F,
    /// 3.2.8), and answers its requests independently of the other bearers; the client's
    /// CCCDs stay with its unenhanced bearer, which takes the notifications. When the app
    /// already accepts channels on PSM 0x0027 the link has no enhanced bearers from here.
    private func acceptEnhancedBearers(_ connection: Connection, client: ConnectionATTLink, bonds: (any BondStore)?) async {
        guard let channels = try? await connection.acceptL2CAPChannels(psm: 0x0027, mtu: Int(serverMTU)) else { return }
        let events = await connection.events(bufferingPolicy: .bufferingNewest(8))
        Task { [weak self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await event in events { if case .disconnected = event { return } } }
                group.addTask {
                    for await channel in channels {
                        guard let self else { return }
                        await self.attachEnhanced(channel, connection: connection, client: client, bonds: bonds)
                    }
                }
                // The link ended (or the channels did): the other task stops too.
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// Serves one enhanced bearer: its PDUs go to the server in order, its end disconnects it.
    private func attachEnhanced(_ channel: CreditBasedChannel, connection: Connection, client: ConnectionATTLink, bonds: (any BondStore)?) async {
        let mtu = await min(channel.mtu, channel.peerMTU)
        let sdus = CreditBasedSDUChannel(channel)
        let link = ConnectionATTLink(connection: connection, channel: sdus, bonds: bonds, queue: self.queue)
        let queue = self.queue
        let sameQueue = queue === connection.executor.queue
        let run: @Sendable (@escaping @Sendable () -> Void) -> Void = { work in
            if sameQueue { work() } else { queue.async(execute: work) }
        }
        connection.executor.queue.async {
            run { self.connectEnhanced(link, client: client, mtu: UInt16(clamping: mtu)) }
            sdus.setSliceHandlers(receive: { sdu in
                let pdu = Array(sdu)
                run { self.receive(pdu, on: link) }
            }, close: { _ in
                run { self.disconnect(link) }
            })
        }
    }

    /// Installs the bearer's handlers on the connection's executor.
    private func attach(_ connection: isolated Connection, bonds: (any BondStore)?) throws(ConnectionError) -> ConnectionATTLink {
        let channel = try connection.attChannel()
        let link = ConnectionATTLink(connection: connection, channel: channel, bonds: bonds, queue: queue)
        let sameQueue = queue === connection.executor.queue
        let run: @Sendable (@escaping @Sendable () -> Void) -> Void = { [queue] work in
            if sameQueue { work() } else { queue.async(execute: work) }
        }
        run { self.connect(link) }
        channel.setSliceHandlers(receive: { sdu in
            let pdu = Array(sdu)
            run { self.receive(pdu, on: link) }
        }, close: { _ in
            run { self.disconnect(link) }
        })
        // A PDU longer than this server's ATT_MTU is refused by the host at its first fragment
        // (never buffered); its request gets Invalid PDU (Vol 3, Part F, 3.2.8).
        channel.limitInboundSDUs(to: Int(serverMTU)) { head, _ in
            run { self.refusedOversized(head, on: link) }
        }
        return link
    }

    /// A PDU the bearer refused as longer than the server's ATT_MTU, of which `head` arrived:
    /// a request gets Invalid PDU, a command is dropped (on the queue).
    func refusedOversized(_ head: [UInt8], on link: any ATTServerLink) {
        defer { hooks?.changed(self) }
        let id = ObjectIdentifier(link)
        guard let first = head.first, links[id]?.ended == false else { dropped += 1; return }
        let opcode = ATTOpcode(first)
        guard opcode.kind == .request || opcode.kind == .unknown && !opcode.isCommand else { dropped += 1; return }
        send(.errorResponse(request: opcode, handle: 0, error: .invalidPDU), to: id)
    }
}

/// A link whose bonds live in a store (`serve(_:bonds:)`): the server saves there what it
/// keeps of a bonded client (CCCDs, Client Supported Features, change awareness).
package protocol ATTServerLinkBondStore: AnyObject {
    var bondStore: (any BondStore)? { get }
}

/// The server's end of a link's ATT fixed channel: answers go out through the host's queue for
/// the link, the security is the connection's, and an unconfirmed indication ends the link.
/// With a bond store, a refusal for security sends a Security Request and an encrypted link
/// with a bond in the store is that bond's peer. Notifications go while the host's queue for
/// the link is at most half full, so responses always find room in it.
final class ConnectionATTLink: ATTServerLink, ATTServerLinkSecurity, ATTServerLinkClosing, ATTServerLinkSecurityRequest, ATTServerLinkBond,
                               ATTServerLinkFlowControl, ATTServerLinkBondStore, Sendable {
    let connection: Connection
    let channel: any L2CAPChannel
    let centralDescription: String
    let bonds: (any BondStore)?
    var bondStore: (any BondStore)? { bonds }

    /// `queue`: the server's, where the bond's identity is read and written.
    init(connection: Connection, channel: any L2CAPChannel, bonds: (any BondStore)?, queue: DispatchQueue) {
        self.connection = connection
        self.channel = channel
        self.centralDescription = "\(connection.peer.address)"
        self.bonds = bonds
        self.identity = QueueConfined(nil, on: queue)
    }

    /// Asks the central for `level` with bonding (MITM from `.authenticated` up). The Security
    /// Manager sends nothing while a pairing runs; a failure to send only means the central
    /// is not asked (the refusal it got stands).
    func securityRefused(needs level: SecurityLevel) {
        guard bonds != nil else { return }
        let connection = self.connection
        Task { try? await connection.sendSecurityRequest(level) }
    }

    /// The identity address of the bond found for the link's peer, while the link is
    /// encrypted (an unencrypted link could be anyone using that address). Looked up when the
    /// link is encrypted or a pairing saved a bond, not on each request: the store reads files.
    var bondedPeer: LEAddress? { isEncrypted ? identity.value : nil }

    /// Read and written only on the server's queue.
    private let identity: QueueConfined<LEAddress?>

    /// The bond of the peer's address, looked up at each Signed Write Command (on the server's
    /// queue): a central that bonded on an earlier link may sign without encrypting this one,
    /// and the first pairing's bond is found as soon as it is saved.
    var signingPeer: LEAddress? { bonds?.bond(resolving: connection.peer)?.address }

    /// Finds the peer's bond in the store and returns it (on the server's queue).
    @discardableResult
    func lookUpBond() -> Bond? {
        guard let bonds, isEncrypted, let bond = bonds.bond(resolving: connection.peer) else { return nil }
        identity.value = bond.address
        return bond
    }

    /// Queued on the link in the order sent: at once on the adapter's queue, else after a hop
    /// there (a server on a queue of its own).
    func sendToCentral(_ pdu: [UInt8]) {
        if channel.executor.isOnQueue {
            channel.enqueue(pdu)
        } else {
            let channel = self.channel
            channel.executor.queue.async { channel.enqueue(pdu) }
        }
    }

    /// The connection's security, read on the adapter queue where the connection publishes it
    /// (`Connection.linkSecurity`); a server on a queue of its own sees the link as
    /// unencrypted, so protected attributes are refused rather than served.
    private var level: SecurityLevel {
        connection.executor.isOnQueue ? connection.linkSecurity.value.level : .none
    }

    var isEncrypted: Bool { level >= .encrypted }
    var isAuthenticated: Bool { level >= .authenticated }
    var encryptionKeySize: Int {
        connection.executor.isOnQueue ? connection.linkSecurity.value.keySize ?? 16 : 0
    }

    /// The host's queue for the link is at most half full (read on the adapter's queue; a
    /// server on another queue sends, and the host's own bound drops what does not fit).
    var canSend: Bool {
        guard channel.executor.isOnQueue, let fixed = channel as? FixedChannel else { return true }
        return fixed.hasSendRoom
    }

    func whenCanSend(_ body: @escaping @Sendable () -> Void) {
        guard let fixed = channel as? FixedChannel else { return body() }
        if fixed.executor.isOnQueue { fixed.whenSendRoom(body) } else { fixed.executor.queue.async { fixed.whenSendRoom(body) } }
    }

    func closeBearer() {
        let connection = self.connection
        Task { try? await connection.disconnect() }
    }
}
