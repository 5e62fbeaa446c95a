"""swarmkit.export.exporter"""
