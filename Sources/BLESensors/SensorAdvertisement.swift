import BLECore

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
    public func serviceData(uuid16: UInt16) -> [UInt8]? {
        serviceData(BluetoothUUID(uuid16: uuid16))
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
