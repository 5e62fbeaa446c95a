"""swarmkit.engine.swarm"""
