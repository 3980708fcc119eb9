@_exported import GATTClient
@_exported import GATTServer
