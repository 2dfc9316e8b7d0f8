"""Raw mode (KIP-712): source record batches forwarded to the target byte for byte, in rooms that
import downwards only.

``raw_path`` (the data path) > ``forwarder`` (fetch to produce) | ``writer`` (the target side, built
in one place) > ``fetch`` | ``produce`` > ``txn`` > ``wire``; ``pyproject.toml`` holds the contract.
"""
