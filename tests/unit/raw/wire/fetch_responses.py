"""A Fetch response to decode in tests: one topic, one partition, the given record batches."""

from __future__ import annotations

from kafka.protocol.consumer import FetchResponse


def encoded_fetch_response(records: bytes, version: int = 12) -> bytes:
    """A Fetch v``version`` response carrying ``records`` for partition 0 of topic ``t``, encoded."""
    response = FetchResponse(
        version=version,
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="t",
                partitions=[
                    FetchResponse.FetchableTopicResponse.PartitionData(
                        partition_index=0,
                        error_code=0,
                        high_watermark=10,
                        last_stable_offset=10,
                        log_start_offset=0,
                        aborted_transactions=[],
                        preferred_read_replica=-1,
                        records=records,
                    )
                ],
            )
        ],
    )
    return bytes(response.encode(version=version))
