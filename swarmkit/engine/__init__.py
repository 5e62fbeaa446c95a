"""swarmkit.engine.engine"""
