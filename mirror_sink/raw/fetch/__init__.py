"""Raw mode's source side: read_committed Fetch of whole record batches in fetch sessions, driven by a
thread of its own within the memory budget."""
