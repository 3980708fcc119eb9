@_exported import ATT
