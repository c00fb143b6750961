"""The HTTP adapter: the extender protocol, /explain and the operational endpoints."""
