import BLECore
import BLEWire

/// One advertisement as the sensor decoders see it: the AD structures of the advertising report,
/// those of the scan response when one was received, and the advertiser's address.
///
///     let ad = SensorAdvertisement(address: peripheral.address, data: peripheral.advertisingData)
public struct SensorAdvertisement: Sendable, Hashable {
    public var address: LEAddress
    public var data: AdvertisingData
    public var scanResponse: AdvertisingData

    public init(address: LEAddress, data: AdvertisingData, scanResponse: AdvertisingData = AdvertisingData()) {
        self.address = address
        self.data = data
        self.scanResponse = scanResponse
    }

    /// The service data for `uuid`, from the report first, then from the scan response.
    public func serviceData(_ uuid: BluetoothUUID) -> [UInt8]? {
        data.serviceData[uuid] ?? scanResponse.serviceData[uuid]
    }

    /// The service data for a 16-bit UUID, from the report first, then from the scan response.
    /// Walks the structures without building a dictionary (every format asks for its UUID).
    public func serviceData(uuid16: UInt16) -> [UInt8]? {
        Self.serviceData(uuid16, in: data) ?? Self.serviceData(uuid16, in: scanResponse)
    }

    /// The last service data structure of `data` for `uuid16`, in any UUID width, as
    /// `AdvertisingData.serviceData` keys it.
    static func serviceData(_ uuid16: UInt16, in data: AdvertisingData) -> [UInt8]? {
        let uuid = BluetoothUUID(uuid16: uuid16)
        var found: [UInt8]?
        for s in data.structures {
            switch s {
            case .serviceData16(let u, let d) where u == uuid16: found = d
            case .serviceData32(let u, let d) where BluetoothUUID(uuid32: u) == uuid: found = d
            case .serviceData128(let u, let d) where BluetoothUUID(uuid128: u) == uuid: found = d
            default: break
            }
        }
        return found
    }

    /// Every manufacturer-specific data structure of the report, then of the scan response.
    public var manufacturerData: [ManufacturerSpecificData] {
        data.manufacturerData + scanResponse.manufacturerData
    }

    /// The first manufacturer-specific data carrying `companyID` (report first).
    public func manufacturerData(companyID: UInt16) -> [UInt8]? {
        manufacturerData.first { $0.companyID == companyID }?.data
    }

    /// The local name from the report or the scan response.
    public var localName: String? { data.localName ?? scanResponse.localName }
}
