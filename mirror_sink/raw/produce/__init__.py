"""Raw mode's target side: rewritten batches pipelined to the target leaders in Produce requests, and
the re-encoding fallback."""
