import BLEWire

/// Controller bring-up (Core Spec Vol 4, Part E, 7.3 and 7.4; Vol 6 for the LE parts).
extension HCIHost {
    /// Events the central needs: Disconnection Complete, Encryption Change, Read Remote Version
    /// Complete, Hardware Error, Data Buffer Overflow, Encryption Key Refresh, LE Meta.
    static let eventMask: UInt64 = (1 << 4) | (1 << 7) | (1 << 11) | (1 << 15) | (1 << 25) | (1 << 47) | (1 << 61)
    /// LE subevents 0x01-0x0D, 0x14 and 0x29 (bit n-1 for subevent n).
    static let leEventMask: UInt64 = 0x1FFF | (1 << 0x13) | (1 << 0x28)

    /// Resets (when `reset`) and reads the controller's capabilities, sets the event masks and
    /// the ACL buffer geometry. With `reset` false (kernel-owned adapters) it only reads.
    public func initializeController(reset: Bool) async throws(HCIError) -> ControllerInfo {
        if reset { try await send(HCICommand.reset(), timeout: .seconds(5)) }
        let version = try await read(HCIReturn.ReadLocalVersionInformation.self, HCICommand.readLocalVersionInformation())
        let commands = try await read(HCIReturn.ReadLocalSupportedCommands.self, HCICommand.readLocalSupportedCommands()).commands
        let features = try await read(HCIReturn.ReadLocalSupportedFeatures.self, HCICommand.readLocalSupportedFeatures()).lmpFeatures
        let leFeatures = try await read(HCIReturn.LEReadLocalSupportedFeatures.self, HCICommand.leReadLocalSupportedFeatures()).features

        var length = 0, count = 0, shared = false
        if commands.supports(.leReadBufferSizeV2) == true {
            let b = try await read(HCIReturn.LEReadBufferSizeV2.self, HCICommand.leReadBufferSizeV2())
            (length, count) = (Int(b.leACLDataPacketLength), Int(b.totalNumLEACLDataPackets))
        } else {
            let b = try await read(HCIReturn.LEReadBufferSize.self, HCICommand.leReadBufferSize())
            (length, count) = (Int(b.leACLDataPacketLength), Int(b.totalNumLEACLDataPackets))
        }
        if length == 0 || count == 0 {
            // Vol 4, Part E, 7.8.2: zero means LE shares the BR/EDR buffers.
            let b = try await read(HCIReturn.ReadBufferSize.self, HCICommand.readBufferSize())
            (length, count, shared) = (Int(b.aclDataPacketLength), Int(b.totalNumACLDataPackets), true)
        }
        setACLBuffers(packetLength: length, packetCount: count)

        if reset {
            try await send(HCICommand.setEventMask(Self.eventMask))
            try await send(HCICommand.leSetEventMask(Self.leEventMask))
        }
        let address = try await read(HCIReturn.ReadBDADDR.self, HCICommand.readBDADDR()).address
        return ControllerInfo(
            address: address, hciVersion: version.hciVersion, hciSubversion: version.hciSubversion,
            lmpVersion: version.lmpVersion, lmpSubversion: version.lmpSubversion, manufacturer: version.companyIdentifier,
            supportedCommands: commands, lmpFeatures: features, leFeatures: leFeatures,
            aclPacketLength: aclPacketLength, aclPacketCount: aclPacketCount, sharesBREDRBuffers: shared)
    }

    /// Sends `command` and decodes its return parameters as `R`.
    package func read<R: HCIReturnParameters>(_ type: R.Type, _ command: HCICommandPacket) async throws(HCIError) -> R {
        let rp = try await send(command)
        do {
            switch try HCIReturn.decode(type, from: rp) {
            case .success(let value): return value
            case .failure(let status): throw HCIError.commandFailed(opcode: command.opcode, status: status)
            }
        } catch let error as DecodeError {
            throw .invalidReturnParameters(opcode: command.opcode, error)
        } catch let error as HCIError {
            throw error
        } catch {
            throw .invalidReturnParameters(opcode: command.opcode, .malformed(what: "return parameters", detail: "\(error)"))
        }
    }

    public func setParameterUpdatePolicyIfAny(_ policy: (@Sendable (UInt16, ConnectionParameterRange) -> Bool)?) {
        parameterUpdatePolicy = policy
    }
}
