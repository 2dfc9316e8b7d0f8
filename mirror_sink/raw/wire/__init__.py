"""What raw mode's fetch, produce and transaction rooms share: the Kafka connections, frames read and
written in place, the record-batch format and the memory budget."""
