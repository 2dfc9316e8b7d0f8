"""Process helpers: logging, retry, repeating jobs, bounded calls, exits, memory settings, build facts."""
