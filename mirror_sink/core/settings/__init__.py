"""Config infrastructure and policies: files, providers, secrets, plugin discovery, topic naming and filters."""
