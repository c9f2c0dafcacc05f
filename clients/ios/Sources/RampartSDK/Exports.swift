@_exported import RampartCore
