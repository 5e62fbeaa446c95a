"""swarmkit.credentials"""
