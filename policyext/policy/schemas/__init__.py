"""The JSON Schemas of SchedulingPolicy and PolicyTest (data files)."""
