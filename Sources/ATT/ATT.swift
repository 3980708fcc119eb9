@_exported import BLECore
