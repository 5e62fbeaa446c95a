"""Keys and credentials: kept out of every record, display, log and written file.

    scrub       credentials scrubbed out of text where it enters, before anything cuts it
    secrets     key values found in bytes about to be written, and the refusal to write
    endpoints   the endpoints this process has sent a key to
"""

__all__: list[str] = []
